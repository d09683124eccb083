import RavePostgres
import Synchronization

/// The index of one board version behind a lock; handlers hold the lock only for in-memory work, never across
/// an `await`.
final class BoardIndex: Sendable {
    let boardID: Int64
    let version: Int
    /// How long loading took: reading the last chunk from the table, and the build left after it.
    let loadTimes: (read: Duration, rest: Duration)?
    private let index: Mutex<RankIndex>

    init(boardID: Int64, version: Int, index: consuming RankIndex, loadTimes: (read: Duration, rest: Duration)? = nil) {
        self.boardID = boardID
        self.version = version
        self.loadTimes = loadTimes
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
/// pages are then served from PostgreSQL. Concurrent first requests share one load. A loaded index is also kept
/// in `ready`, so the hot path (every query) is one dictionary look-up under the lock, without awaiting a task.
final class BoardIndexes: Sendable {
    private struct Key: Hashable {
        var boardID: Int64
        var version: Int
    }

    private struct State {
        var loading: [Key: Task<BoardIndex, any Error>] = [:]
        var ready: [Key: BoardIndex] = [:]

        mutating func remove(where shouldRemove: (Key) -> Bool) {
            for key in loading.keys where shouldRemove(key) { loading[key] = nil }
            for key in ready.keys where shouldRemove(key) { ready[key] = nil }
        }
    }

    private enum Lookup {
        case ready(BoardIndex)
        case loading(Task<BoardIndex, any Error>)
    }

    private let state = Mutex(State())
    private let scores: ScoreStore

    init(scores: ScoreStore) {
        self.scores = scores
    }

    /// The index of `board` at `version`, loading it (and evicting the board's older versions) when needed.
    func index(of board: BoardDefinition, version: Int) async throws -> BoardIndex {
        let key = Key(boardID: board.boardID, version: version)
        let scores = self.scores
        let found = state.withLock { state -> Lookup in
            if let index = state.ready[key] { return .ready(index) }
            if let task = state.loading[key] { return .loading(task) }
            state.remove { $0.boardID == board.boardID && $0.version < version }
            let task = Task {
                // The index is built while the table is read; only the last merges and the hash table wait for it.
                let started = ContinuousClock.now
                var builder = RankIndexBuilder(ascending: board.ascending)
                try await scores.read(boardID: board.boardID, version: version) { builder.add($0) }
                let read = ContinuousClock.now
                let index = await builder.build()
                return BoardIndex(
                    boardID: board.boardID, version: version, index: index,
                    loadTimes: (read - started, ContinuousClock.now - read))
            }
            state.loading[key] = task
            return .loading(task)
        }
        let task: Task<BoardIndex, any Error>
        switch found {
        case .ready(let index): return index
        case .loading(let loading): task = loading
        }
        do {
            let index = try await task.value
            state.withLock { state in
                // Only if it was not evicted meanwhile (a rebuild or a newer version).
                if state.loading[key] == task { state.ready[key] = index }
            }
            return index
        } catch {
            // A failed load must not stick: the next request tries again.
            state.withLock { state in
                if state.loading[key] == task { state.loading[key] = nil }
            }
            throw error
        }
    }

    /// The index of `version` of `boardID` once loaded, without starting a load or evicting anything; nil while it
    /// is not (yet) in memory.
    func loadedIndex(boardID: Int64, version: Int) -> BoardIndex? {
        let key = Key(boardID: boardID, version: version)
        return state.withLock { $0.ready[key] }
    }

    /// Whether `version` of `boardID` is in memory (and so served from it).
    func isLoaded(boardID: Int64, version: Int) -> Bool {
        let key = Key(boardID: boardID, version: version)
        return state.withLock { $0.loading[key] != nil || $0.ready[key] != nil }
    }

    /// Drops every loaded version of a board, so the next request reloads it from the table.
    func evict(boardID: Int64) {
        state.withLock { $0.remove { $0.boardID == boardID } }
    }

    /// The indexes already loaded (or loading) of the given boards, for applying merges in memory.
    func loadedIndexes() async -> [BoardIndex] {
        let tasks = state.withLock { Array($0.loading.values) }
        var result: [BoardIndex] = []
        for task in tasks {
            if let index = try? await task.value { result.append(index) }
        }
        return result
    }
}
