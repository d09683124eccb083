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
        await withTaskGroup(of: Void.self) { group in
            for delivery in claimed {
                group.addTask { await self.attempt(delivery) }
            }
        }
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

    private func attempt(_ delivery: ClaimedDelivery) async {
        do {
            try await record(delivery, outcome: await outcome(of: delivery))
        } catch {
            // The lease makes the row due again later, so a failed write only delays this delivery.
            logger.error("recording a delivery failed", [("error", "\(error)")])
        }
    }

    private func outcome(of delivery: ClaimedDelivery) async -> ProviderOutcome? {
        guard delivery.stillRegistered, delivery.push.expiresAt > clock.now() else { return nil }
        guard let provider = providers[delivery.platform.rawValue] else {
            return .failed(reason: "no provider is configured for platform \(delivery.platform.rawValue)")
        }
        return await provider.send(delivery.push)
    }

    private func record(_ delivery: ClaimedDelivery, outcome: ProviderOutcome?) async throws {
        let now = clock.now()
        switch outcome {
        case nil:
            let expired = delivery.push.expiresAt <= now
            try await store.finish(
                delivery, state: expired ? .expired : .skipped,
                result: expired ? "expired before delivery" : "token unregistered", now: now, on: pool)
        case .delivered:
            try await store.finish(delivery, state: .delivered, result: "200", now: now, on: pool)
        case .failed(let reason):
            try await store.finish(delivery, state: .failed, result: reason, now: now, on: pool)
        case .deadToken(let since, let reason):
            try await tokens.removeDead(
                platform: delivery.platform, token: delivery.push.token, deadSince: since ?? now, on: pool)
            try await store.finish(delivery, state: .failed, result: reason, now: now, on: pool)
        case .retry(let after, let reason):
            let next = now.addingTimeInterval(after ?? backoff(attempts: delivery.attempts))
            if next >= delivery.push.expiresAt {
                try await store.finish(delivery, state: .expired, result: reason, now: now, on: pool)
            } else {
                try await store.reschedule(delivery, at: next, result: reason, now: now, on: pool)
            }
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
