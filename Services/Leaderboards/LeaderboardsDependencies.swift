import RaveMerges
import RaveRPC
import RaveRuntime
import RaveTelemetry

/// What every leaderboards handler shares: the engine (boards, scores, indexes, merged ids), which boards this
/// instance owns, the stores beside the engine, and the peers that name friends and players.
final class LeaderboardsDependencies: Sendable {
    let engine: LeaderboardEngine
    /// Which boards this instance serves; a board another instance owns is refused with `NotBoardOwner`.
    let ownership: BoardOwnership
    let friends: any FriendsProvider
    let profiles: any ProfileProvider
    /// Which applications an operator may reach (docs/leaderboards.md, "Operator scope").
    let adminScope: AdminScope
    let achievements: AchievementStore
    /// Reads boards another instance owns from the table, for the listings that describe every board.
    let unownedBoards: UnownedBoardReader
    let mergeStore: MergeStore
    let erasureStore: ErasureStore

    /// A single instance that owns every board without leases, with friends and profiles held in memory, unless
    /// told otherwise (tools and tests).
    init(
        engine: LeaderboardEngine, ownership: BoardOwnership = .sole(),
        friends: any FriendsProvider = StaticFriendsProvider(), profiles: any ProfileProvider = StaticProfileProvider(),
        adminScope: AdminScope = AdminScope(identity: nil, setting: "RAVE_LEADERBOARDS_IDENTITY_ADDRESS")
    ) {
        self.engine = engine
        self.adminScope = adminScope
        self.ownership = ownership
        self.friends = friends
        self.profiles = profiles
        achievements = AchievementStore(pool: engine.scores.pool)
        unownedBoards = UnownedBoardReader(pool: engine.scores.pool)
        mergeStore = MergeStore(pool: engine.scores.pool)
        erasureStore = ErasureStore(pool: engine.scores.pool)
    }

    /// Every RPC service leaderboards serves; player calls (the ones naming players) count for merges' and
    /// erasures' drains, the participants' must not.
    var rpcServices: [any RPCService] {
        let players = PlayerHandlers(dependencies: self)
        return [
            engine.merges.track(players.served), AdminHandlers(dependencies: self),
            LeaderboardsMergeParticipant(dependencies: self), InternalHandlers(dependencies: self),
            LeaderboardsErasureParticipant(dependencies: self), LeaderboardsExportParticipant(dependencies: self),
        ]
    }

    /// Loads the current version of every active board this instance can take, so the first requests do not pay for
    /// loading; boards other instances own are left to them.
    func loadIndexes(logger: Logger) async throws {
        let started = ContinuousClock.now
        var entries = 0
        var elsewhere = 0
        for board in try await engine.definitions.everyActiveBoard() {
            do {
                try await ownership.acquire(board)
            } catch let error as LeaderboardsError where error.notProcessed {
                elsewhere += 1
                continue
            }
            let index = try await engine.currentIndex(of: board)
            let count = index.read { $0.count }
            entries += count
            if let (read, rest) = index.loadTimes {
                logger.info(
                    "index loaded",
                    [
                        ("board", board.key), ("entries", "\(count)"), ("reading", "\(read)"),
                        ("building after the reading", "\(rest)"),
                    ])
            }
        }
        // The leases were taken before the loads, which can outlast a lease (10M entries take longer than the
        // default 15 s on a busy machine), and the lease keeper starts only after this: without a renewal here the
        // instance would serve its first calls on lapsing leases, answering reads from the table instead.
        try await ownership.renewAll()
        logger.info(
            "indexes loaded",
            [
                ("entries", "\(entries)"), ("owned elsewhere", "\(elsewhere)"),
                ("duration", "\(ContinuousClock.now - started)"),
            ])
    }
}
