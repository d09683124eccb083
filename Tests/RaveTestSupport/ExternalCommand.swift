import Foundation

/// Runs a program a test drives from outside (curl, nghttp, bash), on a thread of its own so the cooperative pool
/// never waits for it.
public enum ExternalCommand {
    /// What a run printed and how it ended.
    public struct Outcome: Sendable {
        public var status: Int32
        public var output: String
        public var errors: String
    }

    /// Runs `executable` with `arguments` in `directory` (the test's own when nil), with `environment` added to the
    /// test process's, and returns once it exited.
    public static func run(
        _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String] = [:]
    ) async throws -> Outcome {
        try await onOwnThread {
            let child = try ChildProcess.start(
                executable, arguments, environment: ChildProcess.environment(adding: environment), directory: directory,
                output: .pipe, errors: .pipe)
            // Both pipes are drained together while it runs, so a chatty program never blocks on a full pipe.
            let (output, errors) = child.collectOutput()
            return Outcome(
                status: child.wait().status, output: String(decoding: output, as: UTF8.self),
                errors: String(decoding: errors, as: UTF8.self))
        }
    }

    /// Whether `executable` exists and may be run (tests that need one are skipped without it).
    public static func isInstalled(_ executable: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: executable)
    }
}
