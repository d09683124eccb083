import Glibc

/// `ravectl migrate --service NAME`: applies a service's migrations without starting it.
///
/// The migrations ship inside each service's executable (SwiftPM resources), so this runs the service's own
/// `migrate` mode: the executable named NAME next to ravectl, with the same environment (RAVE_DATABASE_URL, …).
enum MigrateCommand {
    static let usage = "ravectl migrate --service NAME (identity, social, leaderboards, wallet, push, gifts)"

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valueOptions: ["service"])
        let service = try options.required("service")
        guard !service.isEmpty, service.allSatisfy({ $0.isLetter && $0.isLowercase }) else {
            throw UsageError("--service must be a service name such as identity, got \(service)")
        }
        let executable = siblingExecutable(named: service)
        guard access(executable, X_OK) == 0 else {
            throw UsageError("no executable \(executable): build the \(service) service first (make build)")
        }
        return try runToCompletion(executable, arguments: [executable, "migrate"])
    }

    /// The path of `name` in the directory of the running executable.
    private static func siblingExecutable(named name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let own = length > 0 ? String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let directory = own.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return (directory.isEmpty ? "." : directory) + "/" + name
    }

    /// Starts `path` with `arguments` and the current environment, waits, and returns its exit status.
    private static func runToCompletion(_ path: String, arguments: [String]) throws -> Int32 {
        var cArguments = arguments.map { strdup($0) }
        cArguments.append(nil)
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, nil, nil, cArguments, environ)
        guard spawned == 0 else { throw UsageError("could not start \(path): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let terminatedBySignal = status & 0x7f
        return terminatedBySignal == 0 ? (status >> 8) & 0xff : 128 + terminatedBySignal
    }
}
