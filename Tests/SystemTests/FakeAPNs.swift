import Foundation
import RaveTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A local APNs (PushTests' Fixtures/fake_provider.py, on Debian's python3-h2) that the stack's push service
/// delivers to: its own certificate, which push trusts through RAVE_PUSH_CA_FILE, and a log of every request it answered.
final class FakeAPNs: Sendable {
    let baseURL: String
    let certificate: String
    let signingKey: String
    private let logFile: URL
    private let process: ChildProcess

    /// Makes the server's certificate and an APNs signing key with the openssl command, then starts the server.
    init(directory: URL) throws {
        func openssl(_ arguments: [String]) throws {
            let process = try ChildProcess.start("/usr/bin/openssl", arguments, directory: directory.path)
            guard process.wait() == .exited(0) else { throw StackError("openssl \(arguments) failed") }
        }
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "apns-server-key.pem",
            "-out", "apns-server.pem",
        ])
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "apns-key.pem"])
        certificate = directory.appendingPathComponent("apns-server.pem").path
        signingKey = directory.appendingPathComponent("apns-key.pem").path
        logFile = directory.appendingPathComponent("apns-requests.jsonl")
        // PushTests' fake provider, from the source tree: one script plays APNs for both test targets.
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../PushTests/Fixtures/fake_provider.py").standardizedFileURL
        process = try ChildProcess.start(
            "/usr/bin/python3",
            [
                script.path, "--cert", certificate, "--key",
                directory.appendingPathComponent("apns-server-key.pem").path, "--log", logFile.path,
            ], output: .pipe)
        guard let line = process.readLine() else { throw StackError("the fake APNs exited before listening") }
        baseURL = "https://127.0.0.1:" + line.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The settings that point the push service at this server.
    var pushEnvironment: [String: String] {
        [
            "RAVE_PUSH_APNS_URL": baseURL, "RAVE_PUSH_APNS_SANDBOX_URL": baseURL, "RAVE_PUSH_APNS_KEY_FILE": signingKey,
            "RAVE_PUSH_APNS_KEY_ID": "KEY123", "RAVE_PUSH_APNS_TEAM_ID": "TEAM123",
            "RAVE_PUSH_APNS_TOPIC": "com.example.game", "RAVE_PUSH_CA_FILE": certificate,
            "RAVE_PUSH_POLL_INTERVAL": "50ms",
        ]
    }

    /// A notification the server received: the device token and the JSON body push sent.
    struct Delivery: Sendable {
        var token: String
        var status: Int
        var body: String
    }

    /// Every request so far, in order.
    func deliveries() -> [Delivery] {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            return Delivery(
                token: object["token"] as? String ?? "", status: object["status"] as? Int ?? 0,
                body: object["body"] as? String ?? "")
        }
    }

    /// SIGKILL: the server has nothing to drain.
    func stop() {
        process.kill()
    }
}
