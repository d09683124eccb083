import RaveMessages
import RavePostgres
import RaveTelemetry

/// What the package's other modules (the fan-out benchmark, Benchmarks/Push) drive in-process: the sender that fans
/// a notification out to deliveries and the worker that delivers them, set up as `RAVE_PUSH_*` says.
///
/// `package` access: nothing outside this package sees it.
package struct PushInProcess: Sendable {
    private let configuration: PushConfiguration
    private let sender: NotificationSender
    private let worker: DeliveryWorker

    /// Reads the push settings from `environment`, polling for deliveries every `pollInterval`.
    package init(environment: [String: String], pool: PostgresPool, pollInterval: Duration, logger: Logger) throws {
        var configuration = try PushConfiguration(environment: environment)
        configuration.worker.pollInterval = pollInterval
        let clock = SystemClock()
        self.configuration = configuration
        worker = try configuration.makeWorker(pool: pool, clock: clock, logger: logger)
        sender = NotificationSender(dependencies: PushDependencies(pool: pool, clock: clock))
    }

    /// Whether APNs credentials are set (`RAVE_PUSH_APNS_*`).
    package var deliversToAPNs: Bool { configuration.apns != nil }

    /// Deliveries in flight at once.
    package var concurrency: Int { configuration.worker.concurrency }

    /// Deliveries claimed per round.
    package var batchSize: Int { configuration.worker.batchSize }

    /// rave.push.v1.PushInternal/SendNotification's work: the deliveries queued for `request`.
    package func send(_ request: PushV1.SendNotificationRequest) async throws -> PushV1.SendNotificationResponse {
        try await sender.send(request)
    }

    /// Delivers what is due; the number of deliveries attempted (0 when none was due).
    package func drainDeliveries() async throws -> Int {
        try await worker.drain()
    }
}
