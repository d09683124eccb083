import Foundation
import RaveMerges
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
    /// Merged-away players and their targets: every caller and recipient id is resolved through it.
    let merges: MergedUsers
    /// Which applications an operator may reach (docs/push.md, "Operator scope").
    let adminScope: AdminScope
    let logger: Logger

    /// `merges` defaults to one that listens to nothing (tools and tests), which resolves every id from the database.
    init(
        pool: PostgresPool, clock: any PushClock = SystemClock(), deliveriesQueued: @escaping @Sendable () -> Void = {},
        merges: MergedUsers? = nil,
        adminScope: AdminScope = AdminScope(identity: nil, setting: "RAVE_PUSH_IDENTITY_ADDRESS"),
        logger: Logger = Logger(label: "push")
    ) {
        self.pool = pool
        self.adminScope = adminScope
        self.merges = merges ?? MergedUsers(pool: pool, loop: nil, logger: logger)
        self.clock = clock
        self.deliveriesQueued = deliveriesQueued
        self.logger = logger
    }

    /// The services the push process serves: player, operator and internal methods, the merge and erasure
    /// participants, and the event sink (all but the participants count for merges' and erasures' drains).
    var rpcServices: [any RPCService] {
        [
            merges.track(PlayerHandlers(dependencies: self)), merges.track(AdminHandlers(dependencies: self)),
            merges.track(InternalHandlers(dependencies: self)), PushMergeParticipant(dependencies: self),
            PushErasureParticipant(dependencies: self), PushExportParticipant(dependencies: self),
            merges.track(PushEventSink(dependencies: self, logger: logger)),
        ]
    }

    /// The account `id` is now (a merged-away id resolves to its target).
    func player(_ text: String, field: String) async throws -> RaveID {
        try await merges.resolve(Self.raveID(text, field: field))
    }

    /// An id on the wire: 32 lowercase hex digits, as every service reads them; another spelling is refused.
    static func raveID(_ text: String, field: String) throws(PushError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }
}
