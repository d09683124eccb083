import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC

/// Settles a whole group-commit round in two round trips, whatever its size.
///
/// The first pipelined round trip begins the transaction, locks the users' seeds and player accounts and reads
/// the bets already stored; the round is then played in Swift against those locked values, in queue order, with
/// the same rules as `BetEngine` (a unit is one bet or an all-or-nothing chain; a unit short of money is stored
/// as failed; a replay answers from what is stored). The second round trip writes every row with one statement
/// per table and commits. Nothing else can change the locked rows in between, so the balances and nonces played
/// here are the ones committed, and `player_balance_not_negative` still guards every balance in the database.
///
/// A round this path does not take (the same bet id twice) or that fails in the database throws; the caller
/// then settles it unit by unit with `BetEngine`, which is always correct because bets are idempotent.
struct BulkRound: Sendable {
    let ledger: LedgerStore

    /// The round holds something only the unit-by-unit path handles.
    struct Declined: Error {
        var reason: String
    }

    private struct BetKey: Hashable {
        var user: RaveID
        var bet: RaveID
    }

    private struct Seed {
        var id: Int64
        var bytes: [UInt8]
        var hash: String
        var nextNonce: Int64
        var startNonce: Int64
    }

    /// What the round has written so far, in memory.
    private struct State {
        var seeds: [RaveID: Seed] = [:]
        var balances: [Int64: Int64] = [:]
        var transfers = RoundStore.Transfers()
        var bets = RoundStore.Bets()

        /// What a unit may change, so a failing unit is undone without copying the whole round.
        ///
        /// A unit is one user's bet or short chain, so it holds one seed and almost always one balance: the
        /// first of each is kept inline (no allocation per unit), further ones in small arrays searched linearly.
        struct Checkpoint {
            var transfers: Int
            var bets: Int
            var seeds = InlineFirst<(user: RaveID, seed: Seed)>()
            var balances = InlineFirst<(account: Int64, balance: Int64)>()
        }

        func checkpoint(_ unit: [PreparedBet], accounts: Accounts) -> Checkpoint {
            var checkpoint = Checkpoint(transfers: transfers.count, bets: bets.count)
            for bet in unit {
                if !checkpoint.seeds.contains(where: { $0.user == bet.userID }), let seed = seeds[bet.userID] {
                    checkpoint.seeds.append((bet.userID, seed))
                }
                if let account = accounts.players[bet.playerAccount],
                    !checkpoint.balances.contains(where: { $0.account == account }), let balance = balances[account]
                {
                    checkpoint.balances.append((account, balance))
                }
            }
            return checkpoint
        }

        mutating func restore(_ checkpoint: Checkpoint) {
            transfers.removeLast(transfers.count - checkpoint.transfers)
            bets.removeLast(bets.count - checkpoint.bets)
            checkpoint.seeds.forEach { seeds[$0.user] = $0.seed }
            checkpoint.balances.forEach { balances[$0.account] = $0.balance }
        }
    }

    /// A short list whose first element is stored inline: appending one allocates nothing.
    struct InlineFirst<Element> {
        private var first: Element?
        private var rest: [Element] = []

        mutating func append(_ element: Element) {
            if first == nil { first = element } else { rest.append(element) }
        }

        func contains(where matches: (Element) -> Bool) -> Bool {
            guard let first else { return false }
            return matches(first) || rest.contains(where: matches)
        }

        func forEach(_ body: (Element) -> Void) {
            guard let first else { return }
            body(first)
            rest.forEach(body)
        }
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
            var state = State()
            state.bets.reserveCapacity(betCount)
            // A bet that moves money makes a wager transfer and, when it wins, a payout.
            state.transfers.reserveCapacity(2 * all.count { $0.kind.movesMoney })
            for row in results[seedsIndex] {
                let seed = Seed(
                    id: try row.decode(at: 1), bytes: try row.decode(at: 2), hash: try row.decode(at: 3),
                    nextNonce: try row.decode(at: 4), startNonce: try row.decode(at: 4))
                state.seeds[try row.decode(RaveID.self, at: 0)] = seed
            }
            guard state.seeds.count == users.count else { throw Declined(reason: "a seed was rotated meanwhile") }
            var stored: [BetKey: (hash: [UInt8], result: [UInt8])] = [:]
            if let storedIndex {
                for row in results[storedIndex] {
                    let key = BetKey(user: try row.decode(at: 0), bet: try row.decode(at: 1))
                    stored[key] = (try row.decode(at: 2), try row.decode(at: 3))
                }
            }
            var playerAccounts: [AccountKey: Int64] = [:]
            if let accountsIndex {
                for row in results[accountsIndex] {
                    let id = try row.decode(Int64.self, at: 0)
                    playerAccounts[playerKeys[try row.decode(Int.self, at: 2) - 1]] = id
                    state.balances[id] = try row.decode(Int64.self, at: 1)
                }
            }
            let initialBalances = state.balances
            let accounts = Accounts(players: playerAccounts, houses: houseAccounts)
            var outcomes: [Result<[WalletV1.BetResult], any Error>] = []
            for unit in units {
                outcomes.append(play(unit, stored: stored, accounts: accounts, state: &state))
            }
            _ = try await connection.pipeline(writes(state, initialBalances: initialBalances))
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

    private struct Accounts {
        var players: [AccountKey: Int64]
        var houses: [AccountKey: Int64]
    }

    /// Plays one unit against `state`; a unit short of money leaves only its failed bet rows behind.
    private func play(
        _ unit: [PreparedBet], stored: [BetKey: (hash: [UInt8], result: [UInt8])], accounts: Accounts,
        state: inout State
    ) -> Result<[WalletV1.BetResult], any Error> {
        if unit.contains(where: { stored[BetKey(user: $0.userID, bet: $0.betID)] != nil }) {
            return Result { try replay(unit, stored: stored) }
        }
        let before = state.checkpoint(unit, accounts: accounts)
        do {
            var results: [WalletV1.BetResult] = []
            for bet in unit { results.append(try playOne(bet, accounts: accounts, state: &state)) }
            return .success(results)
        } catch let error as WalletError where error.kind == .insufficientFunds {
            state.restore(before)
            var results: [WalletV1.BetResult] = []
            for bet in unit {
                var result = BetEngine.baseResult(bet)
                result.status = .failed
                result.errorCode = error.statusCode.rawValue
                result.errorMessage = unit.count > 1 ? "chain \(bet.chainID) failed: \(error.message)" : error.message
                state.bets.append(
                    bet, status: "failed", payout: 0, seedID: nil, nonce: nil, result: result.protobufBytes())
                results.append(result)
            }
            return .success(results)
        } catch {
            state.restore(before)
            return .failure(error)
        }
    }

    private func playOne(_ bet: PreparedBet, accounts: Accounts, state: inout State) throws -> WalletV1.BetResult {
        guard var seed = state.seeds[bet.userID] else { throw Declined(reason: "no seed for \(bet.userID)") }
        let nonce = seed.nextNonce
        seed.nextNonce += 1
        state.seeds[bet.userID] = seed
        var random = FairRandom(serverSeed: seed.bytes, clientSeed: bet.clientSeed, nonce: nonce)
        let play = try bet.math.play(wager: bet.wager, lines: bet.lines, random: &random)
        var result = BetEngine.baseResult(bet)
        result.status = .settled
        result.outcome = GameMath.outcome(play, currency: bet.currency)
        result.payout = MoneyFormat.format(play.payout, currency: bet.currency)
        result.serverSeedHash = seed.hash
        result.nonce = nonce
        if bet.kind.movesMoney {
            guard let player = accounts.players[bet.playerAccount], let balance = state.balances[player],
                balance >= bet.wager
            else { throw BetEngine.noFunds(bet) }
            guard let house = accounts.houses[bet.houseAccount] else {
                throw Declined(reason: "the house account of \(bet.gameID) is missing")
            }
            var after = balance - bet.wager
            state.transfers.append(
                code: "bet_wager", from: player, to: house, amount: bet.wager, userID: bet.userID, betID: bet.betID,
                fromBalanceAfter: after, toBalanceAfter: nil)
            if play.payout > 0 {
                after += play.payout
                state.transfers.append(
                    code: "bet_payout", from: house, to: player, amount: play.payout, userID: bet.userID,
                    betID: bet.betID, fromBalanceAfter: nil, toBalanceAfter: after)
            }
            state.balances[player] = after
            result.balance = MoneyFormat.format(after, currency: bet.currency)
        }
        state.bets.append(
            bet, status: "settled", payout: play.payout, seedID: seed.id, nonce: nonce, result: result.protobufBytes())
        return result
    }

    /// Answers a unit whose ids were used before from what is stored, like `BetEngine`'s replay.
    private func replay(
        _ unit: [PreparedBet], stored: [BetKey: (hash: [UInt8], result: [UInt8])]
    ) throws -> [WalletV1.BetResult] {
        try unit.map { bet in
            guard let existing = stored[BetKey(user: bet.userID, bet: bet.betID)] else {
                var result = BetEngine.baseResult(bet)
                result.status = .failed
                result.errorCode = StatusCode.aborted.rawValue
                result.errorMessage = "the chain's bet ids were partly used before; nothing was settled"
                return result
            }
            guard existing.hash == bet.requestHash else {
                throw WalletError(.conflictingReplay, "bet id \(bet.betIDText) was already used for a different bet")
            }
            return try existing.result.withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) }
        }
    }

    /// The second round trip: every row of the round, then COMMIT.
    private func writes(_ state: State, initialBalances: [Int64: Int64]) -> [PostgresQuery] {
        var queries: [PostgresQuery] = []
        let advanced = state.seeds.values.filter { $0.nextNonce != $0.startNonce }
        if !advanced.isEmpty {
            queries.append(
                RoundStore.advanceNonces(seedIDs: advanced.map(\.id), nextNonces: advanced.map(\.nextNonce)))
        }
        if state.transfers.count > 0 { queries.append(RoundStore.insertTransfers(state.transfers)) }
        let moved = state.balances.filter { initialBalances[$0.key] != $0.value }.sorted { $0.key < $1.key }
        if !moved.isEmpty {
            queries.append(
                RoundStore.moveBalances(
                    accountIDs: moved.map(\.key), deltas: moved.map { $0.value - (initialBalances[$0.key] ?? 0) }))
        }
        if state.bets.count > 0 { queries.append(RoundStore.insertBets(state.bets)) }
        queries.append(RoundStore.commit)
        return queries
    }
}
