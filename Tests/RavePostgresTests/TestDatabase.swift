import RavePostgres
import RaveTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway database on the test server: created with a random name, dropped by `drop()`.
struct TestDatabase {
    /// One loop shared by every test; connections are spread over it, tests stay independent.
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    /// The superuser URL `with-postgres.sh` exports; tests fail (not skip) without it.
    static func serverURL() throws -> String {
        guard let url = Environment.value("RAVE_TEST_POSTGRES_URL") else {
            Issue.record("RAVE_TEST_POSTGRES_URL is not set: run the tests through scripts/with-postgres.sh")
            throw PostgresError(.client, "RAVE_TEST_POSTGRES_URL is not set")
        }
        return url
    }

    let name: String
    let url: String
    private let serverURL: String

    static func create() async throws -> TestDatabase {
        let serverURL = try serverURL()
        let name = "rave_test_" + RaveID.random().description.replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try await PostgresConnection.connect(to: serverURL, on: group.next())
        defer { admin.close() }
        try await admin.runScript("CREATE DATABASE \(name)")
        guard let slash = serverURL.lastIndex(of: "/") else { throw PostgresError(.client, "bad URL \(serverURL)") }
        return TestDatabase(name: name, url: serverURL[..<slash] + "/" + name, serverURL: serverURL)
    }

    func connect() async throws -> PostgresConnection {
        try await PostgresConnection.connect(to: url, on: Self.group.next(), defaultTimeout: .seconds(60))
    }

    func makePool(size: Int = 4, acquireTimeout: Duration = .seconds(5)) throws -> PostgresPool {
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = size
        configuration.acquireTimeout = acquireTimeout
        return try PostgresPool(configuration: configuration, group: Self.group)
    }

    func drop() async throws {
        let admin = try await PostgresConnection.connect(to: serverURL, on: Self.group.next())
        defer { admin.close() }
        try await admin.runScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Runs `body` against a fresh database and drops it afterwards, whether `body` threw or not.
    static func with<Result>(_ body: (TestDatabase) async throws -> Result) async throws -> Result {
        let database = try await create()
        do {
            let result = try await body(database)
            try await database.drop()
            return result
        } catch {
            try? await database.drop()
            throw error
        }
    }
}

/// Reads the process environment without Foundation's bridging.
enum Environment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
