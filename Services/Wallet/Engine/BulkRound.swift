import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC

/// Settles a whole group-commit round in two round trips, whatever its size.
///
/// The first pipelined round trip begins the transaction, locks the users' seeds and player accounts and reads
/// the bets already stored; the round is then played by `RoundPlay` against those locked values, in queue order
/// (the same rules `BetEngine` applies unit by unit: a unit is one bet or an all-or-nothing chain; a unit short of
/// money is stored as failed; a replay answers from what is stored). The second round trip writes every row with
/// one statement per table and commits. Nothing else can change the locked rows in between, so the balances and
/// nonces played here are the ones committed, and `player_balance_not_negative` still guards every balance in the
/// database.
///
/// A round this path does not take (the same bet id twice, a unit `RoundPlay` declines) or that fails in the
/// database throws; the caller then settles it unit by unit with `BetEngine`, which is always correct because bets
/// are idempotent.
struct BulkRound: Sendable {
    let ledger: LedgerStore

    /// The round holds something only the unit-by-unit path handles.
    typealias Declined = RoundPlay.Declined

    private struct BetKey: Hashable {
        var user: RaveID
        var bet: RaveID
    }

    /// Settles `units` in one transaction on `connection`; returns one outcome per unit once committed.
    ///
    /// `lookingForReplays: false` skips reading which of the round's bets are already stored: a replayed id then
    /// fails the bet insert on `bets_pkey` and so the whole round, before anything is answered (`isReplay(_:)`
    /// tells that failure apart, and the caller settles the round again looking for replays). Replays are rare,
    /// and the read costs an index probe per bet that the insert's own uniqueness check repeats.
    func settle(
        _ units: [[PreparedBet]], on connection: PostgresConnection, lookingForReplays: Bool = true
    ) async throws -> [Result<[WalletV1.BetResult], any Error>] {
        // Read in place: a flattened copy copied every bet of the round (a large value) once more.
        let all = units.joined()
        let betCount = units.reduce(0) { $0 + $1.count }
        guard Set(all.map { BetKey(user: $0.userID, bet: $0.betID) }).count == betCount else {
            throw Declined(reason: "a bet id appears twice in the round")
        }
        var houseAccounts: [AccountKey: Int64] = [:]
        for bet in all where bet.kind.movesMoney && houseAccounts[bet.houseAccount] == nil {
            guard let id = try await ledger.findAccount(bet.houseAccount, on: connection) else {
                throw Declined(reason: "the house account of \(bet.gameID) is missing")
            }
            houseAccounts[bet.houseAccount] = id
        }
        let users = Array(Set(all.map(\.userID))).sorted { ($0.high, $0.low) < ($1.high, $1.low) }
        let playerKeys = Array(Set(all.lazy.filter(\.kind.movesMoney).map(\.playerAccount)))
        let fresh = try users.map { _ in try BetStore.newSeed() }

        let seedsIndex = 2
        var reads = [
            RoundStore.begin,
            RoundStore.genericPlans,
            RoundStore.lockSeeds(
                users: users, freshSeeds: fresh.map { Hex.encode($0.seed) }, freshHashes: fresh.map(\.hash)),
        ]
        let storedIndex = lookingForReplays ? reads.count : nil
        if lookingForReplays {
            reads.append(RoundStore.storedBets(users: all.map(\.userID), betIDs: all.map(\.betID)))
        }
        let accountsIndex = playerKeys.isEmpty ? nil : reads.count
        if !playerKeys.isEmpty { reads.append(RoundStore.lockAccounts(playerKeys)) }
        do {
            let results = try await connection.pipeline(reads)
            var round = RoundPlay()
            round.bets.reserveCapacity(betCount)
            // A bet that moves money makes a wager transfer and, when it wins, a payout.
            round.transfers.reserveCapacity(2 * all.count { $0.kind.movesMoney })
            for row in results[seedsIndex] {
                round.seeds[try row.decode(RaveID.self, at: 0)] = RoundPlay.Seed(
                    id: try row.decode(at: 1), bytes: try row.decode(at: 2), hash: try row.decode(at: 3),
                    nextNonce: try row.decode(at: 4))
            }
            guard round.seeds.count == users.count else { throw Declined(reason: "a seed was rotated meanwhile") }
            var stored: [BetKey: RoundPlay.StoredBet] = [:]
            if let storedIndex {
                for row in results[storedIndex] {
                    let key = BetKey(user: try row.decode(at: 0), bet: try row.decode(at: 1))
                    stored[key] = (try row.decode(at: 2), try row.decode(at: 3))
                }
            }
            if let accountsIndex {
                for row in results[accountsIndex] {
                    let id = try row.decode(Int64.self, at: 0)
                    round.playerAccounts[playerKeys[try row.decode(Int.self, at: 2) - 1]] = id
                    round.balances[id] = try row.decode(Int64.self, at: 1)
                }
            }
            round.houseAccounts = houseAccounts
            let initialBalances = round.balances
            var outcomes: [Result<[WalletV1.BetResult], any Error>] = []
            for unit in units {
                if unit.contains(where: { stored[BetKey(user: $0.userID, bet: $0.betID)] != nil }) {
                    outcomes.append(Result { try replay(unit, stored: stored) })
                    continue
                }
                do {
                    outcomes.append(.success(try round.play(unit)))
                } catch let declined as Declined {
                    // Nothing of the round is answered: it rolls back and is settled unit by unit.
                    throw declined
                } catch {
                    outcomes.append(.failure(error))
                }
            }
            _ = try await connection.pipeline(writes(round, initialBalances: initialBalances))
            return outcomes
        } catch {
            do {
                try await connection.query(PostgresQuery("ROLLBACK"))
            } catch {
                // A connection whose transaction state is unknown must not go back into the pool.
                connection.close()
            }
            throw error
        }
    }

    /// Whether `error` is a round's bet insert meeting an id already stored: a replay that a round settled
    /// without `lookingForReplays` could not see.
    static func isReplay(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.sqlState == "23505" && error.constraint == "bets_pkey"
    }

    /// Answers a unit whose ids were used before from what is stored (`RoundPlay.replay(_:stored:)`).
    private func replay(_ unit: [PreparedBet], stored: [BetKey: RoundPlay.StoredBet]) throws -> [WalletV1.BetResult] {
        try unit.map { try RoundPlay.replay($0, stored: stored[BetKey(user: $0.userID, bet: $0.betID)]) }
    }

    /// The second round trip: every row of the round, then COMMIT.
    private func writes(_ round: RoundPlay, initialBalances: [Int64: Int64]) -> [PostgresQuery] {
        var queries: [PostgresQuery] = []
        let advanced = round.seeds.values.filter { $0.nextNonce != $0.startNonce }
        if !advanced.isEmpty {
            queries.append(
                RoundStore.advanceNonces(seedIDs: advanced.map(\.id), nextNonces: advanced.map(\.nextNonce)))
        }
        if round.transfers.count > 0 { queries.append(RoundStore.insertTransfers(round.transfers)) }
        let moved = round.balances.filter { initialBalances[$0.key] != $0.value }.sorted { $0.key < $1.key }
        if !moved.isEmpty {
            queries.append(
                RoundStore.moveBalances(
                    accountIDs: moved.map(\.key), deltas: moved.map { $0.value - (initialBalances[$0.key] ?? 0) }))
        }
        if round.bets.count > 0 { queries.append(RoundStore.insertBets(round.bets)) }
        queries.append(RoundStore.commit)
        return queries
    }
}
