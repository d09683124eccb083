import Foundation
import Synchronization

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
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // Both pipes are drained while it runs (standard error on a thread of its own), so a chatty program
            // never blocks on a full pipe.
            let errorText = Mutex(Data())
            let errorsRead = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let data = errors.fileHandleForReading.readDataToEndOfFile()
                errorText.withLock { $0 = data }
                errorsRead.signal()
            }
            let out = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            errorsRead.wait()
            return Outcome(
                status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                errors: String(decoding: errorText.withLock { $0 }, as: UTF8.self))
        }
    }

    /// Whether `executable` exists and may be run (tests that need one are skipped without it).
    public static func isInstalled(_ executable: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: executable)
    }
}
