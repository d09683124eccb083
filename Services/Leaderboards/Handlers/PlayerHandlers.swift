import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// The player methods of `rave.leaderboards.v1.Leaderboards` (scores here; achievements in
/// AchievementMethods.swift).
final class PlayerHandlers: LeaderboardsV1.LeaderboardsHandler {
    let dependencies: LeaderboardsDependencies

    /// The scope the gateway gives anonymous (guest) players; they may read boards but not submit.
    static let guestScope = Caller.guestScope

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
    }

    // MARK: - Submitting

    func submitScore(
        _ request: LeaderboardsV1.SubmitScoreRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.SubmitScoreResponse {
        let caller = try context.requireUser()
        guard !caller.scopes.contains(Self.guestScope) else {
            throw LeaderboardsError.failedPrecondition("anonymous players cannot submit scores; sign in first")
        }
        let userID = try await playerID(of: caller)
        let board = try await board(request.leaderboardKey, caller: caller)
        let outcome = try await dependencies.engine.submit(score: request.score, userID: userID, to: board)
        // A lease that lapsed while the write committed may already have a successor whose index missed it: do not
        // acknowledge then (the score is in the table; a retry at the new owner is answered from its index).
        guard dependencies.ownership.holds(board) else {
            throw LeaderboardsError.unavailable("the leaderboard changed owner during the submit; retry")
        }
        return LeaderboardsV1.SubmitScoreResponse(
            newBest: outcome.newBest, highScore: outcome.best.score, globalPosition: Int64(outcome.best.position),
            version: Int64(outcome.version))
    }

    // MARK: - Boards

    func listLeaderboards(
        _ request: LeaderboardsV1.ListLeaderboardsRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ListLeaderboardsResponse {
        let caller = try context.requireCaller()
        let boards = try await dependencies.engine.definitions.activeBoards(appID: caller.appID)
        let userID = try await optionalPlayerID(of: caller)
        let friendIDs = try await friendIDs(of: userID, caller: caller)
        var result: [LeaderboardsV1.Leaderboard] = []
        for board in boards {
            result.append(try await describe(board, userID: userID, friendIDs: friendIDs))
        }
        return LeaderboardsV1.ListLeaderboardsResponse(leaderboards: result)
    }

    func getLeaderboard(
        _ request: LeaderboardsV1.GetLeaderboardRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.GetLeaderboardResponse {
        let caller = try context.requireCaller()
        let board = try await board(request.leaderboardKey, caller: caller)
        let userID = try await optionalPlayerID(of: caller)
        let friendIDs = try await friendIDs(of: userID, caller: caller)
        return LeaderboardsV1.GetLeaderboardResponse(
            leaderboard: try await describe(board, userID: userID, friendIDs: friendIDs))
    }

    /// `getLeaderboard` answered from memory, in place on the event loop (`served`); nil leaves the call
    /// to `getLeaderboard`.
    ///
    /// The same steps, each without waiting; nil when one of them would wait: the board's definition is not
    /// cached, this instance does not hold its lease, the caller's or a friend's id does not resolve from memory,
    /// the friends must be asked for, or the index is not loaded.
    func getLeaderboardFromMemory(
        _ request: LeaderboardsV1.GetLeaderboardRequest, context: RequestContext
    ) throws -> LeaderboardsV1.GetLeaderboardResponse? {
        let caller = try context.requireCaller()
        guard let board = try boardFromMemory(request.leaderboardKey, caller: caller),
            let userID = knownPlayerID(of: caller),
            let friendIDs = knownFriendIDs(of: userID, caller: caller),
            let index = dependencies.engine.loadedCurrentIndex(of: board)
        else { return nil }
        return LeaderboardsV1.GetLeaderboardResponse(
            leaderboard: Self.describe(board, index: index, userID: userID, friendIDs: friendIDs))
    }

    // MARK: - Global scores

    func getGlobalScores(
        _ request: LeaderboardsV1.GetGlobalScoresRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        guard request.version >= 0 else {
            throw LeaderboardsError.invalidArgument("version must be 0 (current) or more, got \(request.version)")
        }
        let page = try RequestLimits.page(request.page)
        let pageSize = try RequestLimits.pageSize(request.pageSize)
        let board = try await board(request.leaderboardKey, caller: caller)
        let result = try await dependencies.engine.globalPage(
            of: board, version: request.version == 0 ? nil : Int(request.version), page: page, pageSize: pageSize)
        return await response(result, appID: caller.appID)
    }

    func getMyGlobalScores(
        _ request: LeaderboardsV1.GetMyScoresRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        let pageSize = try RequestLimits.pageSize(request.pageSize)
        let board = try await board(request.leaderboardKey, caller: caller)
        let userID = try await optionalPlayerID(of: caller) ?? Self.nobody
        return await response(
            try await dependencies.engine.pageOfPlayer(userID, in: board, pageSize: pageSize), appID: caller.appID)
    }

    func getGlobalScoresAdjacent(
        _ request: LeaderboardsV1.GetScoresAdjacentRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        let adjacent = try RequestLimits.adjacent(request.adjacent)
        let board = try await board(request.leaderboardKey, caller: caller)
        let userID = try await optionalPlayerID(of: caller) ?? Self.nobody
        return await response(
            try await dependencies.engine.scoresAround(userID, in: board, adjacent: adjacent), appID: caller.appID)
    }

    // MARK: - Friends scores

    func getFriendsScores(
        _ request: LeaderboardsV1.GetFriendsScoresRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        let page = try RequestLimits.page(request.page)
        let pageSize = try RequestLimits.pageSize(request.pageSize)
        let (ranked, version) = try await friendsRanking(request.leaderboardKey, caller: caller)
        let start = min((page - 1) * pageSize, ranked.count)
        let slice = Array(ranked[start..<min(start + pageSize, ranked.count)])
        return await response(
            ScorePage(scores: slice, version: version, page: page, total: ranked.count), appID: caller.appID)
    }

    func getMyFriendsScores(
        _ request: LeaderboardsV1.GetMyScoresRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        let pageSize = try RequestLimits.pageSize(request.pageSize)
        let (ranked, version) = try await friendsRanking(request.leaderboardKey, caller: caller)
        let userID = try await optionalPlayerID(of: caller)
        let anchor = ranked.first { $0.userID == userID }?.position ?? max(ranked.count, 1)
        let page = (anchor - 1) / pageSize + 1
        let start = min((page - 1) * pageSize, ranked.count)
        let slice = Array(ranked[start..<min(start + pageSize, ranked.count)])
        return await response(
            ScorePage(scores: slice, version: version, page: page, total: ranked.count), appID: caller.appID)
    }

    func getFriendsScoresAdjacent(
        _ request: LeaderboardsV1.GetScoresAdjacentRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        let caller = try context.requireCaller()
        let adjacent = try RequestLimits.adjacent(request.adjacent)
        let (ranked, version) = try await friendsRanking(request.leaderboardKey, caller: caller)
        let userID = try await optionalPlayerID(of: caller)
        // Without a score the player counts as the worst: just after the last friend.
        let position = ranked.first { $0.userID == userID }?.position ?? ranked.count + 1
        let first = max(1, position - adjacent)
        let last = min(ranked.count, position + adjacent)
        let slice = first <= last ? Array(ranked[(first - 1)..<last]) : []
        return await response(
            ScorePage(scores: slice, version: version, page: 1, total: ranked.count), appID: caller.appID)
    }

    // MARK: - Helpers

    /// Stands for a caller without a Rave ID (a guest reading a board): nobody has this ID, so no score.
    static let nobody = RaveID(high: 0, low: 0)

    /// The caller's player: the account its token's user is now (a merged-away id resolves to its target).
    func playerID(of caller: Caller) async throws -> RaveID {
        try await dependencies.engine.merges.resolve(try RequestLimits.id(caller.userID, field: "caller user id"))
    }

    /// `playerID(of:)` for callers that may have no user (a guest reading a board).
    func optionalPlayerID(of caller: Caller) async throws -> RaveID? {
        guard let id = Self.claimedID(of: caller) else { return nil }
        return try await dependencies.engine.merges.resolve(id)
    }

    /// `optionalPlayerID(of:)` from memory: `.some(nil)` for a caller without a user, nil when the id's
    /// resolution needs the database (or the id is erased, which `optionalPlayerID` reports).
    private func knownPlayerID(of caller: Caller) -> RaveID?? {
        guard let id = Self.claimedID(of: caller) else { return .some(nil) }
        return dependencies.engine.merges.resolveKnown(id).map { .some($0) }
    }

    /// The id the caller's user claims before merges are resolved; nil without one (or one that does not parse).
    private static func claimedID(of caller: Caller) -> RaveID? {
        guard !caller.userID.isEmpty, let id = RaveID(wire: caller.userID) else { return nil }
        return id
    }

    /// The board, once this instance holds its lease (taking it on first use).
    ///
    /// From memory when it can (`boardFromMemory`): a cached definition whose lease this instance holds needs no
    /// wait.
    private func board(_ key: String, caller: Caller) async throws -> BoardDefinition {
        if let known = try boardFromMemory(key, caller: caller) { return known }
        let board = try await dependencies.engine.board(
            appID: caller.appID, key: RequestLimits.key(key, field: "leaderboard_key"))
        try await dependencies.ownership.acquire(board)
        return board
    }

    /// `board(_:caller:)` from memory: nil when the definition is not cached or this instance does not hold the
    /// board's lease now (`board` then reads, takes or refuses it).
    private func boardFromMemory(_ key: String, caller: Caller) throws -> BoardDefinition? {
        let key = try RequestLimits.key(key, field: "leaderboard_key")
        guard let board = dependencies.engine.cachedBoard(appID: caller.appID, key: key),
            dependencies.ownership.holds(board)
        else { return nil }
        return board
    }

    private func friendIDs(of userID: RaveID?, caller: Caller) async throws -> [RaveID] {
        guard let userID else { return [] }
        // Social may name a friend merged away since: the friend's scores are under the target.
        return try await dependencies.engine.merges.resolve(
            try await dependencies.friends.friendIDs(of: userID, appID: caller.appID))
    }

    /// `friendIDs(of:caller:)` from memory: nil when the friends provider must be asked or a friend's id does not
    /// resolve from memory.
    private func knownFriendIDs(of userID: RaveID?, caller: Caller) -> [RaveID]? {
        guard let userID else { return [] }
        guard let friends = dependencies.friends.knownFriendIDs(of: userID, appID: caller.appID) else { return nil }
        var resolved: [RaveID] = []
        resolved.reserveCapacity(friends.count)
        for friend in friends {
            guard let id = dependencies.engine.merges.resolveKnown(friend) else { return nil }
            resolved.append(id)
        }
        return resolved
    }

    private func friendsRanking(_ key: String, caller: Caller) async throws -> ([RankedScore], Int) {
        let board = try await board(key, caller: caller)
        let userID = try await optionalPlayerID(of: caller) ?? Self.nobody
        let friendIDs = try await friendIDs(of: userID, caller: caller)
        let result = try await dependencies.engine.friendsRanking(of: userID, friends: friendIDs, in: board)
        return (result.scores, result.version)
    }

    /// The board with its current version, entry count and the player's standing; the index when this instance
    /// owns the board, else the table (no lease taken).
    func describe(
        _ board: BoardDefinition, userID: RaveID?, friendIDs: [RaveID]
    ) async throws
        -> LeaderboardsV1.Leaderboard
    {
        guard dependencies.ownership.holds(board) else {
            return try await describeUnowned(board, userID: userID, friendIDs: friendIDs)
        }
        return Self.describe(
            board, index: try await dependencies.engine.currentIndex(of: board), userID: userID, friendIDs: friendIDs)
    }

    /// An owned board as its loaded index shows it, in one read: the version, the entry count, and the player's
    /// standing, whose friends position counts the distinct friends (the player aside) ranked above the player.
    static func describe(
        _ board: BoardDefinition, index: BoardIndex, userID: RaveID?, friendIDs: [RaveID]
    ) -> LeaderboardsV1.Leaderboard {
        index.read { ranks in
            var leaderboard = LeaderboardsV1.Leaderboard(
                definition: board.message, currentVersion: Int64(index.version), entryCount: Int64(ranks.count))
            if let userID, let best = ranks.standing(of: userID) {
                var above = Set<RaveID>()
                for friend in friendIDs where friend != userID {
                    if let standing = ranks.standing(of: friend), standing.position < best.position {
                        above.insert(friend)
                    }
                }
                leaderboard.standing = LeaderboardsV1.Standing(
                    highScore: best.score, globalPosition: Int64(best.position),
                    friendsPosition: Int64(above.count + 1), setAtUnixMs: best.achievedAt / 1000)
            }
            return leaderboard
        }
    }

    /// A board another instance owns (or nobody yet), from the table: listing an app's boards takes no leases.
    private func describeUnowned(
        _ board: BoardDefinition, userID: RaveID?, friendIDs: [RaveID]
    ) async throws
        -> LeaderboardsV1.Leaderboard
    {
        let version = board.currentVersion(at: dependencies.engine.clock.now())
        var leaderboard = LeaderboardsV1.Leaderboard(
            definition: board.message, currentVersion: Int64(version),
            entryCount: Int64(try await dependencies.unownedBoards.count(of: board, version: version)))
        if let userID, let best = try await dependencies.unownedBoards.standing(of: userID, in: board, version: version)
        {
            let friendsPosition = try await dependencies.unownedBoards.friendsPosition(
                of: userID, friends: friendIDs, in: board, version: version)
            leaderboard.standing = LeaderboardsV1.Standing(
                highScore: best.score, globalPosition: Int64(best.position), friendsPosition: Int64(friendsPosition),
                setAtUnixMs: best.achievedAt / 1000)
        }
        return leaderboard
    }

    func response(_ page: ScorePage, appID: String) async -> LeaderboardsV1.ScoresResponse {
        let found = await dependencies.profiles.profiles(of: page.scores.map(\.userID), appID: appID)
        return LeaderboardsV1.ScoresResponse(
            scores: page.scores.map { entry in
                LeaderboardsV1.ScoreEntry(
                    userId: entry.userID.hex, displayName: found[entry.userID]?.displayName ?? "",
                    pictureUrl: found[entry.userID]?.pictureURL ?? "", score: entry.score,
                    position: Int64(entry.position), setAtUnixMs: entry.achievedAt / 1000)
            },
            version: Int64(page.version), page: Int32(page.page), total: Int64(page.total))
    }
}

// MARK: - Serving

extension PlayerHandlers {
    static let getLeaderboardMethod = "rave.leaderboards.v1.Leaderboards/GetLeaderboard"

    /// The player methods as served: GetLeaderboard answered in place from memory when it can
    /// (`getLeaderboardFromMemory` as its fast path, its handler serving what that leaves), the rest as generated.
    ///
    /// `LeaderboardsDependencies.rpcServices` passes this through `MergedUsers.track`, which counts every call for
    /// merges' and erasures' drains, in-place answers included.
    var served: some RPCService {
        ServedPlayerMethods(
            methods: methods.map { method in
                guard method.name == Self.getLeaderboardMethod else { return method }
                return RPCMethod(name: method.name, handler: method.handler) { request, context in
                    try self.getLeaderboardFromMemory(
                        LeaderboardsV1.GetLeaderboardRequest(protobufBytes: request), context: context
                    )?.protobufBytes()
                }
            })
    }
}

/// `PlayerHandlers.served`: the player service's methods with their fast paths.
struct ServedPlayerMethods: RPCService {
    static var serviceName: String { PlayerHandlers.serviceName }
    let methods: [RPCMethod]
}
