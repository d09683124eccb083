import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport

/// What every handler shares: the stores, the directory of users, and the caller checks.
package final class SocialDependencies: Sendable {
    let pool: PostgresPool
    let directory: any UserDirectory
    /// Which applications an operator may reach (docs/social.md, "Operator scope").
    let adminScope: AdminScope
    let lists: ListStore
    let relationships: RelationshipStore
    let blocks: BlockStore
    let queries: QueryStore
    let profiles: ProfileStore
    let contacts: ContactStore
    let merges: MergeStore
    let erasures: ErasureStore
    /// FriendIds from memory; `SocialMain` runs it as a background service (until then it reads the database).
    let friendIDs: FriendIDCache
    /// Merged-away users and their targets, through which every caller and user id is resolved: `SocialMain` passes
    /// the process's (`ServiceContext.mergedUsers()`, a background service); without one, one on `loop`, which
    /// resolves every id from the database unless its owner runs it.
    let mergedUsers: MergedUsers

    package init(
        pool: PostgresPool, directory: any UserDirectory, configuration: SocialConfiguration, loop: EventLoop,
        logger: Logger, mergedUsers: MergedUsers? = nil,
        adminScope: AdminScope = AdminScope(identity: nil, setting: "RAVE_SOCIAL_IDENTITY_ADDRESS")
    ) {
        self.pool = pool
        self.directory = directory
        self.adminScope = adminScope
        friendIDs = FriendIDCache(
            pool: pool, loop: loop, capacity: configuration.friendCacheIDs, maxAge: configuration.friendCacheMaxAge,
            logger: logger)
        lists = ListStore(pool: pool, directory: directory, defaultMaxMembers: configuration.maxListMembers)
        relationships = RelationshipStore(pool: pool)
        blocks = BlockStore(pool: pool)
        queries = QueryStore(pool: pool)
        profiles = ProfileStore(pool: pool, directory: directory)
        contacts = ContactStore(pool: pool)
        merges = MergeStore(pool: pool)
        erasures = ErasureStore(pool: pool)
        self.mergedUsers = mergedUsers ?? MergedUsers(pool: pool, loop: loop, logger: logger)
        // Merges and erasures another social process applied: move or erase what calls here wrote meanwhile.
        let merges = self.merges
        self.mergedUsers.onSweep { source, target in try await merges.sweep(source: source, target: target) }
        let erasures = self.erasures
        self.mergedUsers.onErasure { erased in try await erasures.sweep(erased) }
    }

    /// The RPC services; the calls of those that name users count for merges' and erasures' drains (the
    /// participants' must not).
    var rpcServices: [any RPCService] {
        [
            mergedUsers.track(PlayerHandlers(dependencies: self)), AdminHandlers(dependencies: self),
            mergedUsers.track(InternalHandlers(dependencies: self)), SocialMergeParticipant(dependencies: self),
            SocialErasureParticipant(dependencies: self), SocialExportParticipant(dependencies: self),
        ]
    }

    /// The signed-in player and the application they play.
    struct Player: Sendable {
        var userID: RaveID
        var appID: RaveID
        var caller: Caller
    }

    /// The caller: the account its token's user is now (a merged-away id resolves to its target).
    func player(_ context: RequestContext) async throws -> Player {
        let caller = try context.requireUser()
        return Player(
            userID: try await user(caller.userID, field: "caller user id"),
            appID: try RequestLimits.userID(caller.appID, field: "caller app id"), caller: caller)
    }

    /// A user named in a request (`field`): the account that id is now.
    func user(_ text: String, field: String) async throws -> RaveID {
        try await mergedUsers.resolve(RequestLimits.userID(text, field: field))
    }

    /// Runs a handler's transactional work knowing when the caller stops waiting, so a transaction that conflicts
    /// is not retried past the call's deadline (`PostgresPool.callDeadline`).
    func withinDeadline<Result>(of context: RequestContext, _ body: () async throws -> Result) async throws -> Result {
        try await PostgresPool.$callDeadline.withValue(context.deadline) { try await body() }
    }

    /// The user a reference names, known to identity and not the caller.
    func target(
        _ reference: SocialV1.UserReference?, player: Player, field: String = "target"
    ) async throws
        -> DirectoryProfile
    {
        let lookup: UserLookup
        switch reference?.key {
        case .userId(let text)?: lookup = .id(try RequestLimits.userID(text, field: "\(field).user_id"))
        case .email(let email)?:
            guard (3...254).contains(email.utf8.count), email.contains("@") else {
                throw SocialError.invalidArgument("\(field).email must be an email address")
            }
            lookup = .email(email)
        case .username(let name)?:
            guard (1...64).contains(name.utf8.count) else {
                throw SocialError.invalidArgument("\(field).username must be 1…64 bytes")
            }
            lookup = .username(name)
        case nil: throw SocialError.invalidArgument("\(field) must set one of user_id, email or username")
        }
        // A deleted account identity still finds (its deletion under way) is nobody here already.
        guard let profile = try await directory.findUser(lookup, appID: player.appID),
            mergedUsers.erased(among: [profile.userID]).isEmpty
        else {
            throw SocialError.unknownUser(lookup.description)
        }
        guard profile.userID != player.userID else {
            throw SocialError.invalidArgument("\(field) is the caller; relationships need two users")
        }
        return profile
    }

    /// A relationship page with fresh profiles and the total count.
    func page(
        _ query: SocialV1.ListQuery?, kind: RelationshipList.Kind, direction: EdgeDirection, player: Player
    ) async throws -> SocialV1.ListPage {
        let query = query ?? SocialV1.ListQuery()
        let request = try PageRequest(query)
        let list = try await lists.resolve(query.listKey, appID: player.appID, kind: kind)
        let (rows, next, pageTotal) = try await queries.page(
            list: list, owner: player.userID, direction: direction, request: request)
        let total: Int
        if let pageTotal {
            total = pageTotal
        } else if request.prefix.isEmpty {
            total = try await relationships.count(list: list, owner: player.userID, direction: direction)
        } else {
            total = try await queries.countMatching(
                list: list, owner: player.userID, direction: direction, prefixPattern: request.prefixPattern)
        }
        return SocialV1.ListPage(
            users: try await profiles.present(rows, appID: player.appID, list: list),
            totalCount: UInt32(clamping: total),
            nextCursor: next?.encoded ?? "")
    }
}
