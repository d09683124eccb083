import CRaveSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A program a test starts and controls (a service executable, python3, openssl), spawned with `posix_spawn`.
///
/// Foundation's `Process` is not used: in this toolchain its `run()` lists `/proc/self/fd` and reads past the
/// directory buffer, which now and then crashes a test process that has many descriptors open, and it reaps its
/// children through a signal source. Here the child gets exactly the descriptors asked for (everything else is
/// closed), the default signal mask and dispositions (a test process may block SIGTERM or ignore SIGPIPE, and a
/// child would inherit both), and is reaped only by this object.
public final class ChildProcess: Sendable {
    /// Where the child's standard input comes from.
    public enum Input: Sendable {
        case null
        /// A pipe the test writes with `write(_:)` and ends with `closeInput()`.
        case pipe
    }

    /// Where standard output or standard error goes.
    public enum Output: Sendable {
        case null
        /// A pipe the test reads with `readLine()` or `collectOutput()`.
        case pipe
        /// Appended to the file at this path (created when missing).
        case file(String)
        /// Standard error only: the same place as standard output.
        case standardOutput
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or 128 + the signal, as a shell reports it.
        public var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "status \(status)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    public let processIdentifier: pid_t
    private let input: Mutex<Int32?>
    private let output: Int32?
    private let errors: Int32?
    private let termination = Mutex<Termination?>(nil)

    private init(processIdentifier: pid_t, input: Int32?, output: Int32?, errors: Int32?) {
        self.processIdentifier = processIdentifier
        self.input = Mutex(input)
        self.output = output
        self.errors = errors
    }

    deinit {
        input.withLock { if let fd = $0 { close(fd) } }
        if let output { close(output) }
        if let errors { close(errors) }
    }

    /// Starts `executable` (an absolute path) with `arguments`, in `directory` (the test's own when nil), with
    /// exactly `environment` (the test process's when nil).
    public static func start(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        directory: String? = nil, input: Input = .null, output: Output = .null, errors: Output = .null
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The parent's ends of the pipes; the child's ends are closed here once the child has its copies.
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        func failed(_ what: String, _ code: Int32) -> ChildProcessError {
            for fd in parentEnds { close(fd) }
            return ChildProcessError("cannot start \(executable): \(what): \(String(cString: strerror(code)))")
        }
        /// A close-on-exec pipe whose child end becomes `target`; returns the parent's end.
        func pipe(to target: Int32, childReads: Bool) throws -> Int32 {
            var ends: [Int32] = [0, 0]
            guard rave_pipe_cloexec(&ends) == 0 else { throw failed("pipe", errno) }
            let (child, parent) = childReads ? (ends[0], ends[1]) : (ends[1], ends[0])
            parentEnds.append(parent)
            childEnds.append(child)
            posix_spawn_file_actions_adddup2(&actions, child, target)
            return parent
        }
        func route(_ destination: Output, to target: Int32) throws -> Int32? {
            switch destination {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .pipe:
                return try pipe(to: target, childReads: false)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .standardOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
            return nil
        }

        let inputEnd: Int32?
        switch input {
        case .null:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            inputEnd = nil
        case .pipe:
            inputEnd = try pipe(to: 0, childReads: true)
        }
        if case .standardOutput = output { throw failed("standard output cannot go to itself", EINVAL) }
        let outputEnd = try route(output, to: 1)
        let errorsEnd = try route(errors, to: 2)
        if let directory {
            let code = rave_spawn_add_chdir(&actions, directory)
            guard code == 0 else { throw failed("chdir \(directory)", code) }
        }
        let code = rave_spawn_add_close_from(&actions, 3)
        guard code == 0 else { throw failed("closefrom", code) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let environmentStrings = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environmentStrings.map { $0.map { strdup($0) } + [nil] }
        defer { for entry in envp ?? [] { free(entry) } }

        var pid: pid_t = 0
        let spawned = argv.withUnsafeBufferPointer { arguments in
            if let envp {
                return envp.withUnsafeBufferPointer { environment in
                    posix_spawn(
                        &pid, executable, &actions, &attributes, arguments.baseAddress!, environment.baseAddress!)
                }
            }
            return posix_spawn(&pid, executable, &actions, &attributes, arguments.baseAddress!, environ)
        }
        guard spawned == 0 else { throw failed("posix_spawn", spawned) }
        return ChildProcess(processIdentifier: pid, input: inputEnd, output: outputEnd, errors: errorsEnd)
    }

    /// The current environment with `additions` laid over it.
    public static func environment(adding additions: [String: String]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(additions) { $1 }
    }

    // MARK: - Ending

    /// How the child ended, or nil while it runs; reaps it once it has ended.
    public var ended: Termination? {
        termination.withLock { termination in
            if let termination { return termination }
            var status: Int32 = 0
            switch waitpid(processIdentifier, &status, WNOHANG) {
            case processIdentifier: termination = Self.termination(status)
            // Reaped by someone else (a waitpid(-1) elsewhere in the process): it has ended, how is unknown.
            case -1 where errno == ECHILD: termination = .exited(-1)
            default: return nil
            }
            return termination
        }
    }

    public var isRunning: Bool { ended == nil }

    /// Sends `signal` unless the child has already ended (its id may then belong to another process).
    public func signal(_ signal: Int32) {
        termination.withLock { termination in
            if termination == nil { _ = Glibc.kill(processIdentifier, signal) }
        }
    }

    /// Blocks the calling thread until the child ends.
    @discardableResult
    public func wait() -> Termination {
        // Waits without reaping, so `ended` and `signal` never meet a reaped id; the reaping happens under the lock.
        var information = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &information, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        while true {
            if let ended { return ended }
            usleep(1_000)
        }
    }

    /// Waits (without holding a thread) until the child ends; throws when it still runs after `limit`.
    @discardableResult
    public func wait(within limit: Duration) async throws -> Termination {
        let deadline = ContinuousClock.now + limit
        while true {
            if let ended { return ended }
            guard ContinuousClock.now < deadline else {
                throw ChildProcessError("process \(processIdentifier) still runs after \(limit)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// SIGKILL unless it has ended, then waits: what a crash looks like.
    public func kill() {
        signal(SIGKILL)
        wait()
    }

    private static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    // MARK: - Pipes

    /// Writes `bytes` to the child's standard input (a `.pipe`).
    public func write(_ bytes: [UInt8]) throws {
        try input.withLock { fd in
            guard let fd else { throw ChildProcessError("standard input is not a pipe, or is closed") }
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    throw ChildProcessError("writing to the child: \(String(cString: strerror(errno)))")
                }
                written += count
            }
        }
    }

    /// Closes the child's standard input, so it reads end-of-file.
    public func closeInput() {
        input.withLock { fd in
            if let open = fd { close(open) }
            fd = nil
        }
    }

    /// Reads standard output (a `.pipe`) up to and including the next newline; nil at end-of-file before one.
    public func readLine() -> String? {
        guard let output else { return nil }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(output, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return nil }
            line.append(byte)
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
        }
    }

    /// Reads standard output and standard error (whichever are pipes) to end-of-file, both at once, so a child
    /// writing much to one never blocks on the other while this waits.
    public func collectOutput() -> (output: [UInt8], errors: [UInt8]) {
        var collected: [Int32: [UInt8]] = [:]
        var open = [output, errors].compactMap { $0 }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !open.isEmpty {
            var polled = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polled, nfds_t(polled.count), -1) >= 0 || errno == EINTR else { break }
            for entry in polled where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    collected[entry.fd, default: []] += buffer[..<count]
                } else if count == 0 || errno != EINTR {
                    open.removeAll { $0 == entry.fd }
                }
            }
        }
        return (output.flatMap { collected[$0] } ?? [], errors.flatMap { collected[$0] } ?? [])
    }
}

/// A child could not be started or driven; the message says which step failed and why.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
