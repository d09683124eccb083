import RaveEvents
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry

/// What every handler shares: the stores, the directory of players, and the caller checks.
package final class GiftsDependencies: Sendable {
    let pool: PostgresPool
    let directory: any PlayerDirectory
    /// Which applications an operator may reach (docs/gifts.md, "Operator scope").
    let adminScope: AdminScope
    let logger: Logger
    let types: GiftTypeStore
    let gifts: GiftStore
    let requests: RequestStore
    let shares: ShareStore
    let idempotency: IdempotentCalls
    let merges: MergeStore
    let erasures: ErasureStore
    /// Merged-away players and their targets: every caller and player id is resolved through it.
    let mergedUsers: MergedUsers

    /// `mergedUsers` defaults to one that listens to nothing (tools and tests), which resolves every id from the
    /// database.
    package init(
        pool: PostgresPool, directory: any PlayerDirectory, logger: Logger, mergedUsers: MergedUsers? = nil,
        adminScope: AdminScope = AdminScope(identity: nil, setting: "RAVE_GIFTS_IDENTITY_ADDRESS")
    ) {
        self.pool = pool
        self.adminScope = adminScope
        self.mergedUsers = mergedUsers ?? MergedUsers(pool: pool, loop: nil, logger: logger)
        self.directory = directory
        self.logger = logger
        types = GiftTypeStore(pool: pool)
        gifts = GiftStore(pool: pool)
        requests = RequestStore(pool: pool, gifts: gifts)
        shares = ShareStore(pool: pool, gifts: gifts)
        idempotency = IdempotentCalls(pool: pool)
        merges = MergeStore(pool: pool)
        erasures = ErasureStore(pool: pool)
        // Merges and erasures another gifts process applied: move or erase what calls here wrote meanwhile.
        let merges = self.merges
        self.mergedUsers.onSweep { source, target in try await merges.sweep(source: source, target: target) }
        let erasures = self.erasures
        self.mergedUsers.onErasure { erased in try await erasures.sweep(erased) }
    }

    /// Every RPC service gifts serves, the event sink for identity's provider links included; the calls of those
    /// that name players count for merges' and erasures' drains (the participants' must not).
    var rpcServices: [any RPCService] {
        [
            mergedUsers.track(PlayerHandlers(dependencies: self)), InstallHandlers(dependencies: self),
            AdminHandlers(dependencies: self), GiftsMergeParticipant(dependencies: self),
            GiftsErasureParticipant(dependencies: self), GiftsExportParticipant(dependencies: self),
            mergedUsers.track(providerLinkSink),
        ]
    }

    /// Consumes "identity.provider_linked": the subject's pending external gifts become gifts to the new player.
    var providerLinkSink: EventSinkService {
        EventSinkService(pool: pool, logger: logger) { [self] event, transaction in
            guard event.topic == EventTopic.providerLinked else { return false }
            return try await deliverExternalGifts(event, in: transaction)
        }
    }

    /// The signed-in player and the application they play.
    struct Player: Sendable {
        var userID: RaveID
        var appID: RaveID
    }

    /// The caller: the account its token's user is now (a merged-away id resolves to its target).
    func player(_ context: RequestContext) async throws -> Player {
        let caller = try context.requireUser()
        return Player(
            userID: try await mergedUsers.resolve(RequestLimits.id(caller.userID, field: "caller user id")),
            appID: try RequestLimits.id(caller.appID, field: "caller app id"))
    }

    // MARK: - Recipients

    /// The recipients of one send or request, sorted into those who can receive and the reasons of the others.
    struct Screening: Sendable {
        /// Per requested recipient, in order: nil when eligible, else why not.
        var statuses: [GiftsV1.RecipientStatus?]
        /// The eligible recipients' canonical ids, with their position in the request.
        var eligible: [(index: Int, user: RaveID)]
        var senderName: String
    }

    /// Resolves recipients through identity (merged ids become their targets) and checks blocks through social,
    /// with the sender's name fetched alongside.
    func screen(_ recipients: [RaveID], sender: RaveID, appID: RaveID) async throws -> Screening {
        async let name = directory.displayName(of: sender, appID: appID)
        var canonical = try await directory.canonicalIDs(of: Array(Set(recipients)))
        // A deleted account identity still knows (its deletion under way) is unknown here already.
        for (requested, user) in canonical where !mergedUsers.erased(among: [requested, user]).isEmpty {
            canonical[requested] = nil
        }
        var statuses: [GiftsV1.RecipientStatus?] = []
        var candidates: [(index: Int, user: RaveID)] = []
        var seen: Set<RaveID> = []
        for (index, requested) in recipients.enumerated() {
            guard let user = canonical[requested] else {
                statuses.append(requested == sender ? .yourself : .unknownUser)
                continue
            }
            if user == sender {
                statuses.append(.yourself)
            } else if !seen.insert(user).inserted {
                statuses.append(.duplicate)
            } else {
                statuses.append(nil)
                candidates.append((index, user))
            }
        }
        let blocked = try await directory.blockedPeers(of: sender, among: candidates.map(\.user))
        var eligible: [(index: Int, user: RaveID)] = []
        for candidate in candidates {
            if blocked.contains(candidate.user) {
                statuses[candidate.index] = .blocked
            } else {
                eligible.append(candidate)
            }
        }
        return Screening(statuses: statuses, eligible: eligible, senderName: await name)
    }

    // MARK: - Events

    private func deliverExternalGifts(
        _ event: EventsV1.Event, in transaction: PostgresTransaction
    ) async throws
        -> Bool
    {
        // A payload that cannot be read would fail every redelivery too: it is logged and skipped.
        guard let linked = try? IdentityV1.ProviderLinkedEvent(protobufBytes: event.payload),
            let linkedUser = RaveID(linked.userId), !linked.subject.isEmpty
        else {
            logger.warning("unreadable provider link event; ignored", [("event_id", event.eventId)])
            return false
        }
        // The player may have been merged away since the link was made, or deleted: then nothing is delivered, and
        // the event is left as not consumed (redelivering it would not change that).
        let user: RaveID
        do {
            user = try await mergedUsers.resolve(linkedUser)
        } catch is ErasureError {
            return false
        }
        let subject = ExternalSubject(provider: linked.provider.rawValue, subject: linked.subject)
        // Names first, outside the locks: they only decorate the gift received events.
        var names: [RaveID: String] = [:]
        for (sender, appID) in try await shares.pendingSenders(of: subject) where names[sender] == nil {
            names[sender] = await directory.displayName(of: sender, appID: appID)
        }
        let delivered = try await shares.deliverPending(
            for: subject, to: user, senderNames: names, in: transaction)
        if delivered > 0 {
            logger.info("external gifts delivered", [("user_id", user.hex), ("gifts", "\(delivered)")])
        }
        return true
    }
}
