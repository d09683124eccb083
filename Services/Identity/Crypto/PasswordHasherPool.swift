import Dispatch
import Foundation
import RaveCrypto
import RaveMessages
import RaveRPC
import RaveTelemetry
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs password hashes on a fixed number of dedicated threads below normal priority, behind a short queue.
///
/// A hash costs ~100 ms of one core (`PasswordHasher`). Run on Swift's cooperative pool, a few dozen password
/// attempts a second would occupy every pool thread and make every other identity call wait behind them. Here at
/// most `threads` hashes run at once, each on a thread of this pool with nice value `niceness` (Linux keeps the
/// nice value per thread), so the scheduler gives guest logins, refreshes and the event loops the CPU first.
///
/// Callers take a *slot* (`withSlot`) before doing anything a password attempt costs — the login throttle's
/// database round trip, the credential lookup, the hash. At most `threads + queueLimit` slots are out at once; the
/// next caller gets RESOURCE_EXHAUSTED (not processed, so another replica may take it) with a retry hint, before
/// any database call or hash. A slot may run several hashes one after another (a login's verify, then a rehash).
final class PasswordHasherPool: Sendable {
    /// Makes and checks the hashes.
    let hasher: PasswordHasher
    /// Hashes that may run at once (one thread each).
    let threads: Int
    /// Slots that may wait beyond those: the queue.
    let queueLimit: Int
    /// A valid hash of a random password, verified against when an email is unknown so that the answer's timing
    /// does not tell whether the account exists; made with the pool's parameters, like every stored hash.
    let decoyHash: String

    private let queue: HashQueue
    private let slotsInUse = Atomic<Int>(0)
    private let metrics: PasswordHashingMetrics

    /// Starts `threads` hashing threads at nice value `niceness` (0 keeps the process's priority).
    init(
        hasher: PasswordHasher, threads: Int, queueLimit: Int, niceness: Int32 = 10,
        metrics: MetricsRegistry = .shared
    ) throws(CryptoError) {
        precondition(threads > 0 && queueLimit >= 0, "password hashing needs at least one thread")
        self.hasher = hasher
        self.threads = threads
        self.queueLimit = queueLimit
        decoyHash = try hasher.hash(UUID().uuidString)
        self.metrics = PasswordHashingMetrics(registry: metrics)
        queue = HashQueue()
        for index in 0..<threads {
            let thread = Thread { [queue, niceness] in queue.work(niceness: niceness) }
            thread.name = "password-hash-\(index)"
            thread.start()
        }
    }

    deinit {
        queue.stop(threads: threads)
    }

    /// Hashes started since the pool was made (each verify and each new hash counts one).
    var hashesStarted: Int { queue.started.load(ordering: .relaxed) }

    /// Slots taken now: running, queued, or held by a caller between hashes.
    var slotsTaken: Int { slotsInUse.load(ordering: .relaxed) }

    /// Takes a slot for `body`, or throws RESOURCE_EXHAUSTED (not processed) when `threads + queueLimit` are taken.
    func withSlot<Result>(_ body: (Slot) async throws -> Result) async throws -> Result {
        let taken = slotsInUse.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        guard taken <= threads + queueLimit else {
            slotsInUse.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            metrics.refused.increment()
            throw refusal(waiting: taken - 1)
        }
        metrics.slots.increment(by: 1)
        defer {
            slotsInUse.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            metrics.slots.increment(by: -1)
        }
        return try await body(Slot(pool: self))
    }

    /// What a slot holder may do: hash and verify on the pool's threads.
    struct Slot: Sendable {
        fileprivate let pool: PasswordHasherPool

        /// Hashes `password` with the pool's parameters and a new salt.
        func hash(_ password: String) async throws -> String {
            let hasher = pool.hasher
            return try await pool.onHashingThread { () throws(CryptoError) in try hasher.hash(password) }
        }

        /// True when `password` matches `encoded`; an unknown account passes nil and is checked against the decoy.
        func verify(_ password: String, against encoded: String?) async throws -> Bool {
            let hasher = pool.hasher
            let target = encoded ?? pool.decoyHash
            let matches = try await pool.onHashingThread { () throws(CryptoError) in
                try hasher.verify(password, against: target)
            }
            return matches && encoded != nil
        }
    }

    /// RESOURCE_EXHAUSTED with the time the slots now taken need to drain, in the message and as a RetryInfo.
    private func refusal(waiting: Int) -> IdentityError {
        let rounds = max(1, (waiting + threads - 1) / threads)
        let milliseconds = max(1, queue.averageHashNanoseconds / 1_000_000) * rounds
        var info = GatewayV1.RetryInfo()
        info.retryAfterMs = UInt32(clamping: milliseconds)
        return IdentityError(
            code: .resourceExhausted,
            message: "password checks are at capacity (\(threads) at once, \(queueLimit) waiting); retry after "
                + "\(milliseconds) ms",
            details: info.protobufBytes(), notProcessed: true)
    }

    /// Runs `work` on a hashing thread and returns its result; only a slot's holder may call it (`Slot`).
    func onHashingThread<Value: Sendable>(
        _ work: @escaping @Sendable () throws(CryptoError) -> Value
    ) async throws -> Value {
        let result: Result<Value, CryptoError> = await withCheckedContinuation { continuation in
            queue.enqueue {
                do throws(CryptoError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        do {
            return try result.get()
        } catch {
            throw IdentityError.internalError("password hashing failed: \(error.message)")
        }
    }
}

/// The jobs waiting for a hashing thread, and the threads' loop; the threads hold this, not the pool, so the pool's
/// `deinit` can stop them.
private final class HashQueue: Sendable {
    typealias Job = @Sendable () -> Void

    let started = Atomic<Int>(0)
    /// A moving average of the time one job takes (nanoseconds), for the retry hint; starts at 100 ms.
    private let average = Atomic<Int>(100_000_000)
    private let jobs = Mutex<(pending: [Job], stopped: Bool)>(([], false))
    private let available = DispatchSemaphore(value: 0)

    var averageHashNanoseconds: Int { average.load(ordering: .relaxed) }

    func enqueue(_ job: @escaping Job) {
        jobs.withLock { $0.pending.append(job) }
        available.signal()
    }

    func stop(threads: Int) {
        jobs.withLock { $0.stopped = true }
        for _ in 0..<threads { available.signal() }
    }

    /// A hashing thread's life: lower its own priority, then run jobs until stopped.
    func work(niceness: Int32) {
        #if canImport(Glibc)
        // On Linux the nice value belongs to the thread; `who` 0 is the calling thread.
        if niceness != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
        #endif
        while true {
            available.wait()
            let next = jobs.withLock { state -> Job? in
                if state.stopped { return nil }
                return state.pending.isEmpty ? nil : state.pending.removeFirst()
            }
            guard let job = next else {
                if jobs.withLock({ $0.stopped }) { return }
                continue
            }
            started.wrappingAdd(1, ordering: .relaxed)
            let start = ContinuousClock.now
            job()
            let elapsed = (ContinuousClock.now - start) / .nanoseconds(1)
            let previous = average.load(ordering: .relaxed)
            average.store(previous + (Int(elapsed) - previous) / 8, ordering: .relaxed)
        }
    }
}

/// The pool's series on the admin port.
private struct PasswordHashingMetrics: Sendable {
    let slots: Gauge
    let refused: Counter

    init(registry: MetricsRegistry) {
        slots = registry.gauge(
            "identity.password.slots", help: "Password attempts holding a hashing slot (running, queued or between).")
        refused = registry.counter(
            "identity.password.refused_total", help: "Password attempts refused because every hashing slot was taken.")
    }
}
