import Synchronization

/// The checks `/readyz` runs: the process is ready only when every one passes.
///
/// A check throws (or returns a reason) when its dependency is not usable: the database unreachable, migrations
/// not yet applied, the process draining. Checks run concurrently, each bounded by `timeout`, so one hung
/// dependency makes the answer "not ready" instead of making the probe hang.
///
/// A process is not ready before `finishStartup()`, whatever its checks say: the admin port is bound first, so
/// probes arrive while the RPC port and the checks are still being set up, and a probe that found no failing
/// check then sent callers to a port nothing listened on yet (seen as "connection refused" in SystemTests).
public final class ReadinessChecks: Sendable {
    /// A check: nil when ready, else why not.
    public typealias Check = @Sendable () async -> String?

    private let checks = Mutex<[(name: String, check: Check)]>([])
    private let startupFinished = Atomic<Bool>(false)
    /// How long one check may take before it counts as failed.
    public let timeout: Duration

    public init(timeout: Duration = .seconds(2)) {
        self.timeout = timeout
    }

    /// Says every port is bound and every check added: from now on the checks alone decide.
    public func finishStartup() {
        startupFinished.store(true, ordering: .releasing)
    }

    /// Adds a check named `name` (shown in the `/readyz` answer when it fails).
    public func add(_ name: String, _ check: @escaping Check) {
        checks.withLock { $0.append((name, check)) }
    }

    /// Adds a check that passes when `body` returns and fails with the error's description when it throws.
    public func add(_ name: String, throwing body: @escaping @Sendable () async throws -> Void) {
        add(name) {
            do {
                try await body()
                return nil
            } catch {
                return "\(error)"
            }
        }
    }

    /// The result of one evaluation: each check's name and its failure, in registration order.
    public struct Report: Sendable {
        public var results: [(name: String, failure: String?)]

        /// Whether every check passed.
        public var isReady: Bool { results.allSatisfy { $0.failure == nil } }

        /// One line per check: `name: ok` or `name: <why not>`.
        public var text: String {
            results.map { "\($0.name): \($0.failure ?? "ok")" }.joined(separator: "\n") + "\n"
        }
    }

    /// Runs every check concurrently and reports each one's result (after a failing "startup" entry while the
    /// process is still starting).
    public func evaluate() async -> Report {
        let starting = !startupFinished.load(ordering: .acquiring)
        let registered = checks.withLock { $0 }
        let timeout = self.timeout
        var failures = [String?](repeating: nil, count: registered.count)
        await withTaskGroup(of: (Int, String?).self) { group in
            for (index, entry) in registered.enumerated() {
                group.addTask { (index, await Self.run(entry.check, timeout: timeout)) }
            }
            for await (index, failure) in group { failures[index] = failure }
        }
        let results = zip(registered, failures).map { ($0.name, $1) }
        return Report(results: starting ? [("startup", "ports and checks are still being set up")] + results : results)
    }

    /// Runs `check`, or gives up on it after `timeout`.
    ///
    /// A hung check is abandoned (and cancelled), not awaited: a task group would wait for it to return.
    private static func run(_ check: @escaping Check, timeout: Duration) async -> String? {
        await withCheckedContinuation { continuation in
            let outcome = FirstOutcome(continuation)
            let work = Task { await check() }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                outcome.finish("did not answer within \(timeout)")
                work.cancel()
            }
            Task {
                outcome.finish(await work.value)
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation with whichever result arrives first and ignores the rest.
private final class FirstOutcome: Sendable {
    private let continuation: Mutex<CheckedContinuation<String?, Never>?>

    init(_ continuation: CheckedContinuation<String?, Never>) {
        self.continuation = Mutex(continuation)
    }

    func finish(_ result: String?) {
        let waiting = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: result)
    }
}
