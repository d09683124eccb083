import RavePostgres
import Synchronization

/// The index of one board version behind a lock; handlers hold the lock only for in-memory work, never across
/// an `await`.
final class BoardIndex: Sendable {
    let boardID: Int64
    let version: Int
    private let index: Mutex<RankIndex>

    init(boardID: Int64, version: Int, index: consuming RankIndex) {
        self.boardID = boardID
        self.version = version
        self.index = Mutex(index)
    }

    func read<Result: Sendable>(_ body: (borrowing RankIndex) -> Result) -> Result {
        index.withLock { body($0) }
    }

    func update<Result: Sendable>(_ body: (inout RankIndex) -> Result) -> Result {
        index.withLock { body(&$0) }
    }
}

/// The in-memory indexes of the boards' current versions, loaded from PostgreSQL on first use.
///
/// Only the current version of a board stays in memory: asking for a newer version evicts older ones, whose
/// pages are then served from PostgreSQL. Concurrent first requests share one load.
final class BoardIndexes: Sendable {
    private struct Key: Hashable {
        var boardID: Int64
        var version: Int
    }

    private let loaded = Mutex<[Key: Task<BoardIndex, any Error>]>([:])
    private let scores: ScoreStore

    init(scores: ScoreStore) {
        self.scores = scores
    }

    /// The index of `board` at `version`, loading it (and evicting the board's older versions) when needed.
    func index(of board: BoardDefinition, version: Int) async throws -> BoardIndex {
        let key = Key(boardID: board.boardID, version: version)
        let scores = self.scores
        let task = loaded.withLock { loaded -> Task<BoardIndex, any Error> in
            if let task = loaded[key] { return task }
            for old in loaded.keys where old.boardID == board.boardID && old.version < version {
                loaded[old] = nil
            }
            let task = Task {
                let records = try await scores.entries(boardID: board.boardID, version: version)
                return BoardIndex(
                    boardID: board.boardID, version: version,
                    index: RankIndex(ascending: board.ascending, records: records))
            }
            loaded[key] = task
            return task
        }
        do {
            return try await task.value
        } catch {
            // A failed load must not stick: the next request tries again.
            loaded.withLock { loaded in
                if loaded[key] == task { loaded[key] = nil }
            }
            throw error
        }
    }

    /// Whether `version` of `boardID` is in memory (and so served from it).
    func isLoaded(boardID: Int64, version: Int) -> Bool {
        loaded.withLock { $0[Key(boardID: boardID, version: version)] != nil }
    }

    /// Drops every loaded version of a board, so the next request reloads it from the table.
    func evict(boardID: Int64) {
        loaded.withLock { loaded in
            for key in loaded.keys where key.boardID == boardID { loaded[key] = nil }
        }
    }

    /// The indexes already loaded (or loading) of the given boards, for applying merges in memory.
    func loadedIndexes() async -> [BoardIndex] {
        let tasks = loaded.withLock { Array($0.values) }
        var result: [BoardIndex] = []
        for task in tasks {
            if let index = try? await task.value { result.append(index) }
        }
        return result
    }
}
