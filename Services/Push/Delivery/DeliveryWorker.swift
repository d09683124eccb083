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
                processed = try await runOnce()
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
        let now = clock.now()
        let claimed = try await store.claim(
            now: now, leaseEnd: now.addingTimeInterval(configuration.lease), limit: configuration.concurrency, on: pool)
        let outcomes = await withTaskGroup(of: DeliveryOutcome?.self) { group in
            for delivery in claimed {
                group.addTask { await self.attempt(delivery) }
            }
            var outcomes: [DeliveryOutcome] = []
            for await outcome in group { if let outcome { outcomes.append(outcome) } }
            return outcomes
        }
        // If this write fails the leases run out and the batch is attempted again: at-least-once, never lost.
        try await store.record(outcomes, now: clock.now(), on: pool)
        return claimed.count
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
            return .failed(reason: "no provider is configured for platform \(delivery.platform.rawValue)")
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
