import RavePostgres
import RaveTestSupport
import RaveTransport

/// A throwaway database on the test server (`ScratchDatabase`), with the connections these tests open on it.
struct TestDatabase {
    /// The loops every test's connections run on; tests stay independent through their own databases.
    static var group: EventLoopGroup { ScratchDatabase.group }

    /// The superuser URL `with-postgres.sh` exports; tests fail (not skip) without it.
    static func serverURL() throws -> String {
        try ScratchDatabase.serverURL()
    }

    let url: String

    /// The database's name, the last part of its URL.
    var name: String { url.split(separator: "/").last.map(String.init) ?? url }

    func connect() async throws -> PostgresConnection {
        try await PostgresConnection.connect(to: url, on: Self.group.next(), defaultTimeout: .seconds(60))
    }

    func makePool(size: Int = 4, acquireTimeout: Duration = .seconds(5)) throws -> PostgresPool {
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = size
        configuration.acquireTimeout = acquireTimeout
        return try PostgresPool(configuration: configuration, group: Self.group)
    }

    /// Runs `body` against a fresh database and drops it afterwards, whether `body` threw or not.
    static func with<Result>(_ body: (TestDatabase) async throws -> Result) async throws -> Result {
        try await ScratchDatabase.with(prefix: "rave_test_") { url in try await body(TestDatabase(url: url)) }
    }
}
