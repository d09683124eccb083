import RaveMessages
import RavePostgres
import Synchronization

/// Which boards this instance may serve: one owner per board, by a lease row in PostgreSQL (`BoardLeaseStore`).
///
/// A board is taken on first use and kept by `renewAll()` (run by `BoardLeaseKeeper` every third of the lease).
/// The instance serves a board only while its lease is valid by its own monotonic clock: the local expiry is the
/// renewal's *send* time plus the lease duration, which is never later than the database's expiry (computed when
/// the statement ran), so the old owner stops before a successor can take the board. A lost lease evicts the
/// board's index; a successor builds its own from the table. All methods may be called from any thread.
final class BoardOwnership: Sendable {
    /// This instance's RPC address as the gateway names it; reported in `NotBoardOwner` and `ListBoardOwners`.
    let address: String
    let leaseDuration: Duration
    /// Random per process: a renewal never extends a lease another process took meanwhile.
    let instanceID: RaveID
    /// Nil for `sole`: one instance that owns every board without asking the database.
    private let store: BoardLeaseStore?
    private let evict: @Sendable (Int64) -> Void
    private let state = Mutex(State())

    private struct Held {
        var boardID: Int64
        /// When the statement that took or last renewed the lease was sent.
        var sent: ContinuousClock.Instant
        var expires: ContinuousClock.Instant
    }

    private struct State {
        var held: [BoardName: Held] = [:]
        /// Boards another instance holds, remembered briefly so misrouted calls do not each query the table.
        var elsewhere: [BoardName: (address: String, until: ContinuousClock.Instant)] = [:]
        var released = false
    }

    /// How long a refusal naming another owner is reused; short, as that owner may release at any moment.
    static let ownerMemory: Duration = .seconds(1)

    /// Leases in `pool`'s `board_leases`; `evict` drops a board's in-memory indexes when its lease is lost.
    init(
        pool: PostgresPool, address: String, leaseDuration: Duration,
        evict: @escaping @Sendable (Int64) -> Void
    ) {
        self.address = address
        self.leaseDuration = leaseDuration
        instanceID = RaveID.random()
        store = BoardLeaseStore(pool: pool)
        self.evict = evict
    }

    private init(address: String) {
        self.address = address
        leaseDuration = .seconds(3600)
        instanceID = RaveID.random()
        store = nil
        evict = { _ in }
    }

    /// A single instance that owns every board without leases, for handlers built directly in tests.
    static func sole(address: String = "127.0.0.1:7503") -> BoardOwnership { BoardOwnership(address: address) }

    /// Returns once this instance holds `board`'s lease, taking it when nobody (valid) holds it; otherwise throws
    /// UNAVAILABLE, not processed, with `NotBoardOwner` naming the owner.
    func acquire(_ board: BoardDefinition) async throws {
        guard let store else { return }
        let name = BoardName(appID: board.appID, key: board.key)
        let now = ContinuousClock.now
        let known = state.withLock { state -> String? in
            if let held = state.held[name], held.expires > now { return address }
            if let owner = state.elsewhere[name], owner.until > now { return owner.address }
            return nil
        }
        if known == address { return }
        if let known { throw refusal(name, owner: known) }
        if state.withLock({ $0.released }) { throw LeaderboardsError(code: .unavailable, message: "shutting down") }
        for _ in 0..<2 {
            let sent = ContinuousClock.now
            let claim = try await store.take(
                appID: board.appID, key: board.key, address: address, instanceID: instanceID, duration: leaseDuration)
            switch claim {
            case .taken(let continued):
                let stale = state.withLock { state -> Bool in
                    let wasHeld = state.held[name] != nil
                    state.held[name] = Held(boardID: board.boardID, sent: sent, expires: sent + leaseDuration)
                    state.elsewhere[name] = nil
                    return !continued || !wasHeld
                }
                // Someone else may have written the board since this instance last held it: start from the table.
                if stale { evict(board.boardID) }
                return
            case .heldElsewhere(let owner, let remaining):
                let lost = state.withLock { state -> Held? in
                    state.elsewhere[name] = (owner, sent + min(remaining, Self.ownerMemory))
                    return state.held.removeValue(forKey: name)
                }
                if let lost { evict(lost.boardID) }
                throw refusal(name, owner: owner)
            case .contended:
                continue
            }
        }
        throw LeaderboardsError(
            code: .unavailable, message: "leaderboard \"\(board.key)\" is changing owner; retry", notProcessed: true)
    }

    /// Whether this instance holds `board`'s lease now, without asking the database.
    func holds(_ board: BoardDefinition) -> Bool {
        guard store != nil else { return true }
        let now = ContinuousClock.now
        return state.withLock {
            $0.held[BoardName(appID: board.appID, key: board.key)].map { $0.expires > now } ?? false
        }
    }

    /// When this instance stops serving `board` unless renewed (its local expiry), or nil when it does not hold it.
    func expiry(of board: BoardDefinition) -> ContinuousClock.Instant? {
        state.withLock { $0.held[BoardName(appID: board.appID, key: board.key)]?.expires }
    }

    /// Renews every held lease in one statement; boards missing from the answer were taken over and are evicted.
    func renewAll() async throws {
        guard let store, !state.withLock({ $0.released }) else { return }
        let sent = ContinuousClock.now
        let stillHeld = try await store.renewAll(instanceID: instanceID, duration: leaseDuration)
        let lost = state.withLock { state -> [Int64] in
            var lost: [Int64] = []
            for (name, held) in state.held where held.sent < sent {
                if stillHeld.contains(name) {
                    state.held[name]?.sent = sent
                    state.held[name]?.expires = sent + leaseDuration
                } else {
                    state.held[name] = nil
                    lost.append(held.boardID)
                }
            }
            return lost
        }
        for boardID in lost { evict(boardID) }
    }

    /// Stops serving every board and deletes this instance's leases, so successors take over at once.
    ///
    /// Runs after the RPC server drained, so no call of this instance is still writing.
    func releaseAll() async throws {
        guard let store else { return }
        let boards = state.withLock { state -> [Int64] in
            state.released = true
            defer { state.held = [:] }
            return state.held.values.map(\.boardID)
        }
        for boardID in boards { evict(boardID) }
        try await store.releaseAll(instanceID: instanceID)
    }

    /// Every unexpired lease, this instance's own included.
    func owners() async throws -> [BoardLease] {
        guard let store else { return [] }
        return try await store.owners()
    }

    private func refusal(_ name: BoardName, owner: String) -> LeaderboardsError {
        let details = LeaderboardsV1.NotBoardOwner(appId: name.appID, leaderboardKey: name.key, address: owner)
        return LeaderboardsError(
            code: .unavailable, message: "leaderboard \"\(name.key)\" is served by \(owner)",
            details: details.protobufBytes(), notProcessed: true)
    }
}
