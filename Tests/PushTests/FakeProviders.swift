import Foundation
import RaveHTTPClient
import RaveMessages
import RaveTelemetry
import RaveTestSupport
import Testing

@testable import Push

/// The local TLS HTTP/2 server (Fixtures/fake_provider.py on Debian's python3-h2) that plays APNs and FCM, with
/// the keys and certificate the tests need.
struct FakeProviders {
    /// Keys and a certificate made once per test process with the openssl command.
    struct Material: Sendable {
        var directory: URL
        var certificate: String { directory.appendingPathComponent("server.pem").path }
        var serverKey: String { directory.appendingPathComponent("server-key.pem").path }
        var apnsKey: String
        var fcmKey: String
    }

    static let material: Result<Material, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rave-push-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func openssl(_ arguments: [String]) throws {
            let process = try ChildProcess.start("/usr/bin/openssl", arguments, directory: directory.path)
            guard process.wait() == .exited(0) else { throw PushError(.configuration, "openssl \(arguments) failed") }
        }
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "server-key.pem",
            "-out", "server.pem",
        ])
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "apns.pem"])
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "fcm.pem"])
        return Material(
            directory: directory,
            apnsKey: try String(contentsOf: directory.appendingPathComponent("apns.pem"), encoding: .utf8),
            fcmKey: try String(contentsOf: directory.appendingPathComponent("fcm.pem"), encoding: .utf8))
    }

    let material: Material
    let baseURL: String
    let logFile: URL

    /// Starts a server for `body` and stops it afterwards.
    static func with<Result>(_ body: (FakeProviders) async throws -> Result) async throws -> Result {
        let material = try Self.material.get()
        guard let fixtures = Bundle.module.url(forResource: "Fixtures", withExtension: nil) else {
            throw PushError(.configuration, "the Fixtures resource is missing")
        }
        let logFile = material.directory.appendingPathComponent("requests-\(UUID().uuidString).jsonl")
        let process = try ChildProcess.start(
            "/usr/bin/python3",
            [
                fixtures.appendingPathComponent("fake_provider.py").path, "--cert", material.certificate, "--key",
                material.serverKey, "--log", logFile.path,
            ], output: .pipe)
        // SIGKILL: the server has nothing to drain.
        defer { process.kill() }
        guard let line = process.readLine() else { throw PushError(.configuration, "the fake provider exited") }
        let port = line.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await body(FakeProviders(material: material, baseURL: "https://127.0.0.1:\(port)", logFile: logFile))
    }

    /// A worker with both providers pointed at this server.
    func worker(_ fixture: PushFixture, backoffBase: TimeInterval = 0.01) throws -> DeliveryWorker {
        let client = try HTTP2Client(caFile: material.certificate, maximumStreams: 100)
        let apns = try APNsProvider(
            configuration: APNsProvider.Configuration(
                productionURL: baseURL, sandboxURL: baseURL, keyID: "KEY123", teamID: "TEAM123",
                topic: "com.example.game", privateKeyPEM: material.apnsKey),
            client: client, clock: fixture.clock)
        let fcm = try FCMProvider(
            configuration: FCMProvider.Configuration(
                baseURL: baseURL, projectID: "demo", clientEmail: "push@demo.iam.gserviceaccount.com",
                privateKeyPEM: material.fcmKey, tokenURL: baseURL + "/token"),
            client: client, clock: fixture.clock)
        var configuration = DeliveryWorker.Configuration()
        configuration.backoffBase = backoffBase
        return DeliveryWorker(
            pool: fixture.pool, providers: [.apns: apns, .fcm: fcm], clock: fixture.clock,
            configuration: configuration, logger: Logger(label: "push-test"))
    }

    /// The requests the server saw, in order.
    func requests() throws -> [(path: String, token: String, status: Int)] {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            return (object["path"] as? String ?? "", object["token"] as? String ?? "", object["status"] as? Int ?? 0)
        }
    }

    func requestCount(token: String) throws -> Int { try requests().filter { $0.token == token }.count }
}
