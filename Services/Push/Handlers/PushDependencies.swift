import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry

/// Everything the handlers share: the pool, the stores, the clock and the hook that wakes delivery workers.
struct PushDependencies: Sendable {
    let pool: PostgresPool
    let clock: any PushClock
    let tokens = TokenStore()
    let notifications = NotificationStore()
    let inbox = InboxStore()
    let templates = TemplateStore()
    /// Called after a send commits, so idle delivery workers start at once instead of at their next poll.
    let deliveriesQueued: @Sendable () -> Void

    init(
        pool: PostgresPool, clock: any PushClock = SystemClock(), deliveriesQueued: @escaping @Sendable () -> Void = {}
    ) {
        self.pool = pool
        self.clock = clock
        self.deliveriesQueued = deliveriesQueued
    }

    /// The services the push process serves: player, operator and internal methods, the merge participant, and
    /// the event sink.
    func services(logger: Logger = Logger(label: "push")) -> [any RPCService] {
        [
            PushService(dependencies: self), PushAdminService(dependencies: self),
            PushInternalService(dependencies: self), PushMergeService(dependencies: self),
            PushEventSink(dependencies: self, logger: logger),
        ]
    }

    /// An id on the wire: 32 lowercase hex digits, as every service reads them; another spelling is refused.
    static func raveID(_ text: String, field: String) throws(PushError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }
}
