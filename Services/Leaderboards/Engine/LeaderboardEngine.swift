import RaveMerges
import RavePostgres
import RaveTelemetry
import Synchronization

/// A page of scores with what the response reports about it.
struct ScorePage: Sendable, Hashable {
    var scores: [RankedScore]
    var version: Int
    /// 1-based.
    var page: Int
    var total: Int
}

/// The result of a submit.
struct SubmitOutcome: Sendable, Hashable {
    var newBest: Bool
    var best: RankedScore
    var version: Int
}

/// Scores and ranks: durable submits through the batcher, queries from the in-memory indexes (current
/// versions) or PostgreSQL (previous versions), board definitions cached briefly.
final class LeaderboardEngine: Sendable {
    let definitions: DefinitionStore
    let scores: ScoreStore
    let indexes: BoardIndexes
    let clock: WallClock
    /// Merged-away players and their targets: every caller and player id is resolved through it.
    let merges: MergedUsers
    private let batcher: SubmitBatcher
    private let boardCache = Mutex<[BoardName: CachedBoard]>([:])

    /// Other instances may change a definition; this bounds how long one serves the old one.
    static let definitionTimeToLive: Duration = .seconds(2)

    private struct BoardName: Hashable {
        var appID: String
        var key: String
    }

    private struct CachedBoard {
        var board: BoardDefinition
        var expires: ContinuousClock.Instant
    }

    /// `concurrentCommits`: group commits running at once; `concurrentBatch`: writes waiting before a commit starts
    /// beside running ones (`SubmitBatcher`); `merges` defaults to one that listens to nothing (tools and tests),
    /// which resolves every id from the database.
    init(
        pool: PostgresPool, clock: WallClock = .system, concurrentCommits: Int = 2, concurrentBatch: Int = 32,
        merges: MergedUsers? = nil
    ) {
        self.merges = merges ?? MergedUsers(pool: pool, loop: nil, logger: Logger(label: "leaderboards"))
        definitions = DefinitionStore(pool: pool)
        let scores = ScoreStore(pool: pool)
        self.scores = scores
        indexes = BoardIndexes(scores: scores)
        self.clock = clock
        batcher = SubmitBatcher(maximumConcurrentCommits: concurrentCommits, minimumConcurrentBatch: concurrentBatch) {
            batch in try await scores.write(batch)
        }
    }

    // MARK: - Definitions

    /// The board, or NOT_FOUND.
    func board(appID: String, key: String) async throws -> BoardDefinition {
        if let board = cachedBoard(appID: appID, key: key) { return board }
        let name = BoardName(appID: appID, key: key)
        let now = ContinuousClock.now
        guard let board = try await definitions.board(appID: appID, key: key) else {
            throw LeaderboardsError.unknownLeaderboard(key)
        }
        boardCache.withLock { $0[name] = CachedBoard(board: board, expires: now + Self.definitionTimeToLive) }
        return board
    }

    /// The board while its cached definition is fresh, else nil (`board(appID:key:)` reads it then).
    func cachedBoard(appID: String, key: String) -> BoardDefinition? {
        let now = ContinuousClock.now
        guard let cached = boardCache.withLock({ $0[BoardName(appID: appID, key: key)] }), cached.expires > now else {
            return nil
        }
        return cached.board
    }

    /// Stores a definition; a changed sort direction invalidates the board's loaded indexes.
    func defineBoard(_ board: BoardDefinition) async throws -> BoardDefinition {
        var board = board
        // The injected clock, not the database's, so version numbers follow the clock tests move.
        board.versionsStart = clock.now()
        let stored = try await definitions.defineBoard(board)
        boardCache.withLock { $0[BoardName(appID: stored.appID, key: stored.key)] = nil }
        indexes.evict(boardID: stored.boardID)
        return stored
    }

    /// Rebuilds the current version's index from the table; returns its entry count.
    func rebuildIndex(of board: BoardDefinition) async throws -> Int {
        indexes.evict(boardID: board.boardID)
        return try await currentIndex(of: board).read { $0.count }
    }

    // MARK: - Submitting

    /// Records `score` for the player in the board's current version; acknowledged once committed.
    func submit(score: Int64, userID: RaveID, to board: BoardDefinition) async throws -> SubmitOutcome {
        let now = clock.now()
        if let reason = board.closedReason(at: now) { throw LeaderboardsError.failedPrecondition(reason) }
        let index = try await currentIndex(of: board, at: now)
        if !index.read({ $0.improves(score, achievedAt: now, for: userID) }) {
            return try outcome(newBest: false, userID: userID, index: index)
        }
        try await batcher.submit(
            ScoreWrite(
                boardID: board.boardID, version: index.version, userID: userID, score: score, achievedAt: now,
                ascending: board.ascending))
        let recorded = index.update { $0.recordStanding(userID: userID, score: score, achievedAt: now) }
        return SubmitOutcome(newBest: recorded.replaced, best: recorded.standing, version: index.version)
    }

    private func outcome(newBest: Bool, userID: RaveID, index: BoardIndex) throws -> SubmitOutcome {
        guard let best = index.read({ $0.standing(of: userID) }) else {
            throw LeaderboardsError.unavailable("the score was stored but the index lost it; retry")
        }
        return SubmitOutcome(newBest: newBest, best: best, version: index.version)
    }

    // MARK: - Queries

    func currentIndex(of board: BoardDefinition, at now: Int64? = nil) async throws -> BoardIndex {
        try await indexes.index(of: board, version: board.currentVersion(at: now ?? clock.now()))
    }

    /// The index of the board's current version when it is in memory, else nil (`currentIndex(of:)` loads it).
    func loadedCurrentIndex(of board: BoardDefinition) -> BoardIndex? {
        indexes.loadedIndex(boardID: board.boardID, version: board.currentVersion(at: clock.now()))
    }

    /// The player's best and global position in the current version.
    func standing(of userID: RaveID, in board: BoardDefinition) async throws -> RankedScore? {
        try await currentIndex(of: board).read { $0.standing(of: userID) }
    }

    /// A page of all scores; `version` nil or the current one is served from memory, an older one from the table.
    func globalPage(
        of board: BoardDefinition, version requested: Int?, page: Int, pageSize: Int
    ) async throws
        -> ScorePage
    {
        let current = board.currentVersion(at: clock.now())
        let version = requested ?? current
        guard version <= current else {
            throw LeaderboardsError.invalidArgument("version must be 0 (current) or 1…\(current), got \(version)")
        }
        let offset = (page - 1) * pageSize
        if version == current {
            let index = try await indexes.index(of: board, version: version)
            return index.read { ranks in
                ScorePage(
                    scores: ranks.scores(from: offset + 1, limit: pageSize), version: version, page: page,
                    total: ranks.count)
            }
        }
        let rows = try await scores.page(of: board, version: version, offset: offset, limit: pageSize)
        let total = try await scores.count(boardID: board.boardID, version: version)
        return ScorePage(scores: rows, version: version, page: page, total: total)
    }

    /// The page that holds the player; a player without a score sits after the last entry, as the worst score.
    func pageOfPlayer(_ userID: RaveID, in board: BoardDefinition, pageSize: Int) async throws -> ScorePage {
        let index = try await currentIndex(of: board)
        let version = index.version
        return index.read { ranks in
            // Without a score the player is not on any page; the last page with entries is where they would be.
            let anchor = ranks.standing(of: userID)?.position ?? max(ranks.count, 1)
            let page = (anchor - 1) / pageSize + 1
            return ScorePage(
                scores: ranks.scores(from: (page - 1) * pageSize + 1, limit: pageSize), version: version,
                page: page, total: ranks.count)
        }
    }

    /// Up to `adjacent` entries above and below the player, the player included; a player without a score is
    /// placed after the last entry, so only entries above appear.
    func scoresAround(_ userID: RaveID, in board: BoardDefinition, adjacent: Int) async throws -> ScorePage {
        let index = try await currentIndex(of: board)
        let version = index.version
        return index.read { ranks in
            let position = ranks.standing(of: userID)?.position ?? ranks.count + 1
            let first = max(1, position - adjacent)
            let scores = ranks.scores(from: first, limit: position + adjacent - first + 1)
            return ScorePage(scores: scores, version: version, page: 1, total: ranks.count)
        }
    }

    /// The player and the friends who have a score, best first, with positions among them.
    func friendsRanking(
        of userID: RaveID, friends: [RaveID], in board: BoardDefinition
    ) async throws
        -> (scores: [RankedScore], version: Int)
    {
        let index = try await currentIndex(of: board)
        let members = Set(friends).union([userID])
        // Global positions are a total order, so sorting by them orders friends without comparing scores again.
        let ranked = index.read { ranks in members.compactMap { ranks.standing(of: $0) } }
            .sorted { $0.position < $1.position }
            .enumerated().map { offset, entry in
                var entry = entry
                entry.position = offset + 1
                return entry
            }
        return (ranked, index.version)
    }
}
