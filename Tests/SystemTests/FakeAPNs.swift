import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A local APNs (PushTests' Fixtures/fake_provider.py, on Debian's python3-h2) that the stack's push service
/// delivers to: its own certificate, which push trusts through RAVE_PUSH_CA_FILE, and a log of every request it answered.
final class FakeAPNs: @unchecked Sendable {
    // @unchecked: every property is set once in init; Process is only signalled and waited for afterwards.
    let baseURL: String
    let certificate: String
    let signingKey: String
    private let logFile: URL
    private let process: Process

    /// Makes the server's certificate and an APNs signing key with the openssl command, then starts the server.
    init(directory: URL) throws {
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = directory
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw StackError("openssl \(arguments) failed") }
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
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            script.path, "--cert", certificate, "--key", directory.appendingPathComponent("apns-server-key.pem").path,
            "--log", logFile.path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = ""
        while !line.hasSuffix("\n") {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw StackError("the fake APNs exited before listening") }
            line += String(decoding: chunk, as: UTF8.self)
        }
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

    /// SIGKILL: the test process may block SIGTERM (the service runtime does), and children inherit that.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
