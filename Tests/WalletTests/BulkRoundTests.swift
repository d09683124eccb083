import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Wallet

@Suite struct BulkRoundTests {
    /// Both engines leave the same rows and give the same answers for the same bets.
    ///
    /// They settle through `RoundPlay`: the same bets against the same seed and balances leave the same rows
    /// (transfers with their sides and balances after, bet rows with status, payout, seed, nonce and stored result,
    /// seeds' nonces, balances) and give the same answers. The first round holds wins and losses, a bet short of
    /// money, a failing chain, credit and unbacked bets; the second exact replays, a conflicting replay, a chain
    /// whose other bet was settled before and whose new bet could not be paid (nothing of it is stored), and a new
    /// bet.
    @Test func bothEnginesWriteTheSameRowsAndAnswersForTheSameBets() async throws {
        try await WalletFixture.with { fixture in
            let bulkUser = RaveID.random()
            let unitUser = RaveID.random()
            let seed = try SecureRandom.bytes(count: 32)
            for user in [bulkUser, unitUser] {
                try await fixture.deposit("5.00", to: user)
                try await fixture.deposit("2.00", to: user, game: "slot")
                try await fixture.pool.query(
                    "INSERT INTO server_seeds (user_id, seed, seed_hash, next_nonce) VALUES ($1, $2, $3, 0)",
                    [user, seed, Hex.encode(Digest.sha256(seed))])
            }
            let first = Self.scenario()
            let dependencies = fixture.dependencies
            let engine = BetEngine(ledger: dependencies.ledger, bets: dependencies.bets)
            let bulk = BulkRound(ledger: dependencies.ledger)
            var answers: [[Answer]] = []
            for units in [first, Self.replayScenario(after: first)] {
                let bulkUnits = try await Self.prepare(units, user: bulkUser, fixture: fixture)
                let bulkOutcomes = try await fixture.pool.withConnection { try await bulk.settle(bulkUnits, on: $0) }
                let unitUnits = try await Self.prepare(units, user: unitUser, fixture: fixture)
                let unitOutcomes = try await fixture.pool.transaction { transaction in
                    var outcomes: [Result<[WalletV1.BetResult], any Error>] = []
                    for unit in unitUnits {
                        do {
                            outcomes.append(.success(try await engine.settle(unit, on: transaction)))
                        } catch {
                            outcomes.append(.failure(error))
                        }
                    }
                    return outcomes
                }
                #expect(bulkOutcomes.map(Answer.init) == unitOutcomes.map(Answer.init))
                answers.append(bulkOutcomes.map(Answer.init))
            }
            #expect(try await Self.rows(of: bulkUser, fixture: fixture) == Self.rows(of: unitUser, fixture: fixture))

            // The scenario reached every branch: wins, money short, a conflicting and a partial replay.
            let results = answers.joined().flatMap(\.results)
            #expect(results.contains { $0.status == .settled && $0.payout != "0.00" })
            #expect(results.contains { $0.errorMessage == "chain chain failed: insufficient funds in USD" })
            #expect(results.contains { $0.errorCode == StatusCode.aborted.rawValue })
            #expect(answers[1].contains(.error(.conflictingReplay)))
            // The replays answer what the first round answered.
            #expect(Array(answers[1].prefix(5)) == [0, 4, 5, 6, 7].map { answers[0][$0] })
            try await fixture.expectLedgerInvariants()
        }
    }

    /// What an engine answered for a unit, comparable across engines.
    enum Answer: Equatable {
        case results([WalletV1.BetResult])
        case error(WalletError.Kind)
        case other(String)

        init(_ outcome: Result<[WalletV1.BetResult], any Error>) {
            switch outcome {
            case .success(let results): self = .results(results)
            case .failure(let error as WalletError): self = .error(error.kind)
            case .failure(let error): self = .other("\(error)")
            }
        }

        var results: [WalletV1.BetResult] {
            if case .results(let results) = self { results } else { [] }
        }
    }

    /// Every row a user's bets left, in a form two users' rows compare by: transfers in id order, bets by id, seeds
    /// and the user's accounts.
    static func rows(of user: RaveID, fixture: WalletFixture) async throws -> [String] {
        let queries = [
            """
            SELECT ROW(t.code, f.kind, f.game_id, d.kind, d.game_id, t.amount, t.from_balance_after,
                t.to_balance_after, t.bet_id)::text
            FROM transfers t
            JOIN accounts f ON f.account_id = t.from_account JOIN accounts d ON d.account_id = t.to_account
            WHERE t.user_id = $1 AND t.code LIKE 'bet%' ORDER BY t.transfer_id
            """,
            """
            SELECT ROW(b.bet_id, b.request_hash, b.game_id, b.kind, b.status, b.currency, b.economy, b.wager,
                b.payout, s.seed_hash, b.nonce, b.client_seed, encode(b.result, 'hex'))::text
            FROM bets b LEFT JOIN server_seeds s ON s.seed_id = b.seed_id WHERE b.user_id = $1 ORDER BY b.bet_id
            """,
            "SELECT ROW(seed_hash, next_nonce, revealed_at)::text FROM server_seeds WHERE user_id = $1 ORDER BY seed_id",
            """
            SELECT ROW(kind, game_id, currency, economy, balance)::text FROM accounts WHERE user_id = $1
            ORDER BY kind, game_id, currency, economy
            """,
        ]
        var rows: [String] = []
        for query in queries {
            for row in try await fixture.pool.query(query, [user]) {
                rows.append(try row.decode(String.self, at: 0))
            }
        }
        return rows
    }

    /// Many callers at once through the group committer: every round settles in bulk.
    @Test func concurrentBetsSettleInBulkRounds() async throws {
        try await WalletFixture.with { fixture in
            let users = (0..<6).map { _ in RaveID.random() }
            for user in users { try await fixture.deposit("50.00", to: user) }
            let service = fixture.service
            try await withThrowingTaskGroup(of: Void.self) { group in
                for user in users {
                    group.addTask {
                        for _ in 0..<10 {
                            let request = WalletV1.PlaceBetsRequest(
                                bets: (0..<5).map { _ in WalletFixture.bet("0.10") })
                            let response = try await service.placeBets(
                                request, context: WalletFixture.playerContext(user))
                            #expect(response.results.allSatisfy { $0.status == .settled })
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(fixture.dependencies.committer.unitByUnitRounds.load(ordering: .relaxed) == 0)
            let stored = try await fixture.pool.query("SELECT count(*) FROM bets WHERE status = 'settled'")
            #expect(try stored[0].decode(Int64.self, at: 0) == 300)
            try await fixture.expectLedgerInvariants()
        }
    }

    /// A round does not look for replays first: one holding a replayed id fails on it and is settled again in
    /// bulk, looking for them; the replay answers what was stored and the rest of the round settles.
    @Test func aRoundHoldingAReplayIsSettledAgainInBulk() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("50.00", to: user)
            let context = WalletFixture.playerContext(user)
            let first = WalletV1.PlaceBetsRequest(bets: (0..<3).map { _ in WalletFixture.bet("0.10") })
            let stored = try await fixture.service.placeBets(first, context: context)
            let balance = try await fixture.balance(of: user)
            let fresh = WalletFixture.bet("0.10")
            let mixed = WalletV1.PlaceBetsRequest(bets: first.bets + [fresh])
            let answer = try await fixture.service.placeBets(mixed, context: context)
            #expect(Array(answer.results.prefix(3)) == stored.results)
            #expect(answer.results.last?.status == .settled)
            let committer = fixture.dependencies.committer
            #expect(committer.replayRetries.load(ordering: .relaxed) >= 1)
            #expect(committer.unitByUnitRounds.load(ordering: .relaxed) == 0)
            let wager = Int64(10)
            let payout = try #require(answer.results.last.map { LedgerModelTests.cents($0.payout) })
            #expect(try await fixture.balance(of: user) == balance - wager + payout)
            try await fixture.expectLedgerInvariants()
        }
    }

    /// A round the bulk path declines (the same bet id twice) is settled unit by unit under the same rules: the
    /// first bet settles, the next takes the next nonce, the repeated id answers what the first stored, a bet short
    /// of money is stored as failed, and the balances are the ones answered.
    @Test func aDeclinedRoundSettlesUnitByUnitUnderTheSameRules() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let repeated = WalletFixture.bet("1.00")
            let units = try await Self.prepare(
                [[repeated], [WalletFixture.bet("0.50")], [repeated], [WalletFixture.bet("900.00")]], user: user,
                fixture: fixture)
            let committer = fixture.dependencies.committer
            let results = try await committer.settle(units: units).map { try #require(try $0.get().first) }
            #expect(committer.unitByUnitRounds.load(ordering: .relaxed) == 1)
            #expect(results[0].status == .settled && results[1].status == .settled && results[2] == results[0])
            #expect(results[1].nonce == results[0].nonce + 1)
            #expect(results[3].status == .failed && results[3].errorMessage == "insufficient funds in USD")
            let payouts = LedgerModelTests.cents(results[0].payout) + LedgerModelTests.cents(results[1].payout)
            #expect(try await fixture.balance(of: user) == 500 - 150 + payouts)
            #expect(LedgerModelTests.cents(results[1].balance) == 500 - 150 + payouts)
            let stored = try await fixture.pool.query(
                "SELECT status, count(*) FROM bets WHERE user_id = $1 GROUP BY status ORDER BY status", [user])
            #expect(
                try stored.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int64.self, at: 1))" } == [
                    "failed 1", "settled 2",
                ])
            try await fixture.expectLedgerInvariants()
        }
    }

    /// A connection prepares the round's statements once: rounds of different sizes, and a round of replays, reuse
    /// the same named statements (fixed SQL text), so no later round sends SQL to parse and plan.
    @Test func roundsOfAnySizeReuseOneSetOfNamedStatements() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("50.00", to: user)
            let bulk = BulkRound(ledger: fixture.dependencies.ledger)
            let one = try await Self.prepare([[WalletFixture.bet("0.10")]], user: user, fixture: fixture)
            let many = try await Self.prepare(
                (0..<40).map { _ in [WalletFixture.bet("0.10")] }, user: user, fixture: fixture)
            let statements = try await fixture.pool.withConnection { connection in
                for units in [one, many, many] {
                    let outcomes = try await bulk.settle(units, on: connection)
                    #expect(try outcomes.allSatisfy { try $0.get().allSatisfy { $0.status == .settled } })
                }
                return try await connection.query(
                    PostgresQuery(
                        """
                        SELECT name, generic_plans + custom_plans, custom_plans FROM pg_prepared_statements
                        WHERE name LIKE 'wallet_round_%' ORDER BY name
                        """))
            }
            // Rounds run on generic plans: none was planned again for its arrays (RoundStore.genericPlans).
            for row in statements { #expect(try row.decode(Int64.self, at: 2) == 0) }
            var executions: [String: Int64] = [:]
            for row in statements { executions[try row.decode(String.self, at: 0)] = try row.decode(Int64.self, at: 1) }
            // Each of the three rounds ran each read once, on one prepared statement per name.
            for name in ["wallet_round_lock_seeds", "wallet_round_stored_bets", "wallet_round_lock_accounts"] {
                #expect(executions[name] == 3, "\(name): \(executions)")
            }
            // The third round only replayed, so it wrote no bets.
            #expect(executions["wallet_round_insert_bets"] == 2, "\(executions)")
            #expect(executions["wallet_round_insert_transfers"] == 2, "\(executions)")
            #expect(try await fixture.pool.query("SELECT count(*) FROM bets")[0].decode(Int64.self, at: 0) == 41)
            try await fixture.expectLedgerInvariants()
        }
    }

    /// Units in queue order: wins and losses, a chain whose last bet cannot be paid, a lone bet too big, a credit
    /// bet, an unbacked bet, then small bets that must still settle.
    static func scenario() -> [[WalletV1.Bet]] {
        var units: [[WalletV1.Bet]] = (0..<4).map { _ in [WalletFixture.bet("0.50", game: "slot")] }
        var chain = [WalletFixture.bet("1.00"), WalletFixture.bet("1.00"), WalletFixture.bet("900.00")]
        for index in chain.indices { chain[index].chainId = "chain" }
        units.append(chain)
        units.append([WalletFixture.bet("800.00")])
        var credit = WalletFixture.bet("1.00")
        credit.creditGameId = "slot"
        units.append([credit])
        var unbacked = WalletFixture.bet("7.00", game: "slot")
        unbacked.unbacked = true
        units.append([unbacked])
        units += (0..<4).map { _ in [WalletFixture.bet("0.20")] }
        return units
    }

    /// A round after `first`: exact replays of units 0, 4, 5, 6 and 7, unit 1 again with another wager, a chain of a
    /// new bet too big to pay with unit 11's bet (settled before), and a new bet.
    static func replayScenario(after first: [[WalletV1.Bet]]) -> [[WalletV1.Bet]] {
        var units = [0, 4, 5, 6, 7].map { first[$0] }
        var conflicting = first[1][0]
        conflicting.wager = "0.60"
        units.append([conflicting])
        var partlyUsed = [WalletFixture.bet("900.00"), first[11][0]]
        for index in partlyUsed.indices { partlyUsed[index].chainId = "late" }
        units.append(partlyUsed)
        units.append([WalletFixture.bet("0.20")])
        return units
    }

    static func prepare(_ units: [[WalletV1.Bet]], user: RaveID, fixture: WalletFixture) async throws -> [[PreparedBet]]
    {
        let caller = try #require(WalletFixture.playerContext(user).caller)
        var prepared: [[PreparedBet]] = []
        for unit in units {
            var bets: [PreparedBet] = []
            for bet in unit {
                let ready = try await PreparedBet.prepare(
                    bet, caller: caller, catalog: fixture.dependencies.catalog, database: fixture.pool)
                if ready.kind.movesMoney {
                    _ = try await fixture.dependencies.ledger.ensureAccount(ready.houseAccount, on: fixture.pool)
                }
                bets.append(ready)
            }
            prepared.append(bets)
        }
        return prepared
    }
}
