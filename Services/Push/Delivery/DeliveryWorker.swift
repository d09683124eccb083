import Foundation
import RaveMessages
import RavePostgres
import RaveRuntime
import RaveTelemetry
import Synchronization

/// Sends due deliveries to the providers with bounded concurrency, retrying 429 and 5xx with exponential backoff
/// and jitter (or the provider's retry-after), giving up at the notification's TTL, and removing dead tokens.
final class DeliveryWorker: Service {
    struct Configuration: Sendable {
        /// Deliveries in flight at once (HTTP/2 streams across providers).
        var concurrency = 100
        /// Deliveries claimed per round trip; a batch larger than `concurrency` keeps the window full while
        /// its slowest sends finish, and the next batch is claimed while this one is sent.
        var batchSize = 1000
        /// How long a claimed delivery stays reserved for this worker; after a crash it is retried after this.
        var lease: TimeInterval = 60
        /// How often an idle worker looks for due deliveries (a send wakes it sooner).
        var pollInterval: Duration = .milliseconds(250)
        var backoffBase: TimeInterval = 1
        var backoffLimit: TimeInterval = 900
    }

    var name: String { "push-delivery" }

    private let pool: PostgresPool
    private let providers: [Int32: any PushProvider]
    private let clock: any PushClock
    private let configuration: Configuration
    private let logger: Logger
    private let store = DeliveryStore()
    private let tokens = TokenStore()
    private let latch = ShutdownLatch()
    private let woken = Atomic<Bool>(false)

    init(
        pool: PostgresPool, providers: [PushV1.Platform: any PushProvider], clock: any PushClock,
        configuration: Configuration, logger: Logger
    ) {
        self.pool = pool
        self.providers = Dictionary(uniqueKeysWithValues: providers.map { ($0.key.rawValue, $0.value) })
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
    }

    /// Makes an idle worker look for work now.
    func wake() { woken.store(true, ordering: .relaxed) }

    func run() async throws {
        while !latch.isOpen {
            let processed: Int
            do {
                processed = try await drain()
            } catch {
                logger.error("claiming deliveries failed", [("error", "\(error)")])
                processed = 0
            }
            if processed == 0 { await idle() }
        }
    }

    func shutdown() async { latch.open() }

    /// Claims one batch of due deliveries and attempts each; returns how many were attempted.
    @discardableResult
    func runOnce() async throws -> Int {
        let claimed = try await claimBatch()
        try await attemptAndRecord(claimed)
        return claimed.count
    }

    /// Sends batches until none is due (or shutdown), claiming the next batch while the current one is sent, so
    /// the database round trips overlap the providers' answers; returns how many deliveries were attempted.
    @discardableResult
    func drain() async throws -> Int {
        var attempted = 0
        var batch = try await claimBatch()
        while !batch.isEmpty {
            let ahead = latch.isOpen ? nil : Task { try await self.claimBatch() }
            do {
                try await attemptAndRecord(batch)
            } catch {
                // The batch claimed ahead is leased like any other: sent now, or after its lease if this throws.
                if let ahead { try await attemptAndRecord(try await ahead.value) }
                throw error
            }
            attempted += batch.count
            batch = try await ahead?.value ?? []
        }
        return attempted
    }

    private func claimBatch() async throws -> [ClaimedDelivery] {
        let now = clock.now()
        return try await store.claim(
            now: now, leaseEnd: now.addingTimeInterval(configuration.lease), limit: configuration.batchSize, on: pool)
    }

    /// Attempts `claimed` with at most `concurrency` in flight (a new send starts as each one finishes), then
    /// records every outcome in one statement.
    private func attemptAndRecord(_ claimed: [ClaimedDelivery]) async throws {
        guard !claimed.isEmpty else { return }
        let outcomes = await withTaskGroup(of: DeliveryOutcome?.self) { group in
            var pending = claimed.makeIterator()
            for _ in 0..<configuration.concurrency {
                guard let delivery = pending.next() else { break }
                group.addTask { await self.attempt(delivery) }
            }
            var outcomes: [DeliveryOutcome] = []
            outcomes.reserveCapacity(claimed.count)
            while let outcome = await group.next() {
                if let outcome { outcomes.append(outcome) }
                if let delivery = pending.next() { group.addTask { await self.attempt(delivery) } }
            }
            return outcomes
        }
        // If this write fails the leases run out and the batch is attempted again: at-least-once, never lost.
        try await store.record(outcomes, now: clock.now(), on: pool)
    }

    private func idle() async {
        let step = Duration.milliseconds(10)
        var waited = Duration.zero
        while waited < configuration.pollInterval, !latch.isOpen {
            if woken.exchange(false, ordering: .relaxed) { return }
            try? await Task.sleep(for: step)
            waited += step
        }
    }

    private func attempt(_ delivery: ClaimedDelivery) async -> DeliveryOutcome? {
        do {
            return try await outcome(delivery, await send(delivery))
        } catch {
            // The lease makes the row due again later, so a failed write only delays this delivery.
            logger.error("removing a dead token failed", [("error", "\(error)")])
            return nil
        }
    }

    private func send(_ delivery: ClaimedDelivery) async -> ProviderOutcome? {
        guard delivery.stillRegistered, delivery.push.expiresAt > clock.now() else { return nil }
        guard let provider = providers[delivery.platform.rawValue] else {
            return .failed(reason: "no provider is configured for platform \(delivery.platform.readableName)")
        }
        return await provider.send(delivery.push)
    }

    private func outcome(_ delivery: ClaimedDelivery, _ answer: ProviderOutcome?) async throws -> DeliveryOutcome {
        let now = clock.now()
        func finished(_ state: PushV1.DeliveryState, _ result: String) -> DeliveryOutcome {
            DeliveryOutcome(delivery: delivery, state: state, nextAttempt: now, result: result)
        }
        switch answer {
        case nil:
            return delivery.push.expiresAt <= now
                ? finished(.expired, "expired before delivery") : finished(.skipped, "token unregistered")
        case .delivered:
            return finished(.delivered, "200")
        case .failed(let reason):
            return finished(.failed, reason)
        case .deadToken(let since, let reason):
            try await tokens.removeDead(
                platform: delivery.platform, token: delivery.push.token, deadSince: since ?? now, on: pool)
            return finished(.failed, reason)
        case .retry(let after, let reason):
            let next = now.addingTimeInterval(after ?? backoff(attempts: delivery.attempts))
            guard next < delivery.push.expiresAt else { return finished(.expired, reason) }
            return DeliveryOutcome(delivery: delivery, state: .pending, nextAttempt: next, result: reason)
        }
    }

    /// Exponential backoff with jitter: base·2^(attempts−1), capped, then a random point in its upper half so
    /// retries of a burst spread out.
    func backoff(attempts: Int) -> TimeInterval {
        let exponential = configuration.backoffBase * pow(2, Double(max(0, min(attempts - 1, 30))))
        let capped = min(exponential, configuration.backoffLimit)
        return Double.random(in: (capped / 2)...capped)
    }
}
