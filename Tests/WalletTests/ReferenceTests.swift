import RaveMessages
import RavePostgres
import Testing

@testable import Wallet

/// Migration 0004: the references of transfers and bets checked once per statement still refuse everything the
/// foreign keys refused, and an upgraded database keeps its money and keeps working.
@Suite struct ReferenceTests {
    @Test func aTransferNamingAMissingAccountIsRefused() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let wallet = try await Self.account(of: user, fixture.pool)
            let missing = try await Self.unusedAccountID(fixture.pool)
            for (from, to) in [(wallet, missing), (missing, wallet)] {
                await Self.expectForeignKeyViolation {
                    try await fixture.pool.query(
                        PostgresQuery(
                            "INSERT INTO transfers (code, from_account, to_account, amount) VALUES ('adjustment', $1, $2, 1)",
                            [from, to]))
                }
            }
            // One bad row among good ones fails the whole statement.
            let external = try await fixture.pool.query("SELECT account_id FROM accounts WHERE kind = 'external'")
            let good = try external[0].decode(Int64.self, at: 0)
            await Self.expectForeignKeyViolation {
                try await fixture.pool.query(
                    PostgresQuery(
                        """
                        INSERT INTO transfers (code, from_account, to_account, amount)
                        SELECT 'adjustment', $1, to_account, 1 FROM unnest(ARRAY[$2, $3]::int8[]) AS t (to_account)
                        """, [wallet, good, missing]))
            }
            await Self.expectForeignKeyViolation {
                try await fixture.pool.query(
                    PostgresQuery("UPDATE transfers SET to_account = $1 WHERE to_account = $2", [missing, wallet]))
            }
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func aBetNamingAMissingSeedIsRefusedAndNoSeedIsAllowed() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            func insertBet(seed: Int64?) async throws {
                try await fixture.pool.query(
                    PostgresQuery(
                        """
                        INSERT INTO bets (user_id, bet_id, request_hash, game_id, kind, status, currency, economy,
                            wager, payout, seed_id, result)
                        VALUES ($1, $2, 'h', 'dice', 'unbacked', 'failed', 'USD', 1, 1, 0, $3, '\\x00')
                        """, [user, RaveID.random(), seed]))
            }
            try await insertBet(seed: nil)
            let missing = try await fixture.pool.query("SELECT coalesce(max(seed_id), 0) + 1000 FROM server_seeds")
            await Self.expectForeignKeyViolation { try await insertBet(seed: try missing[0].decode(Int64.self, at: 0)) }
            await Self.expectForeignKeyViolation {
                try await fixture.pool.query(
                    PostgresQuery(
                        "UPDATE bets SET seed_id = $1 WHERE user_id = $2",
                        [try missing[0].decode(Int64.self, at: 0), user]))
            }
        }
    }

    /// What a foreign key protected on the referenced side: accounts and seeds are never deleted or renumbered.
    @Test func accountsAndSeedsAreNeverDeletedOrRenumbered() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            _ = try await fixture.service.placeBet(
                .init(bet: WalletFixture.bet("0.10")), context: WalletFixture.playerContext(user))
            let statements = [
                "DELETE FROM accounts", "TRUNCATE accounts CASCADE",
                "UPDATE accounts SET account_id = DEFAULT WHERE kind = 'user'",
                "DELETE FROM server_seeds", "TRUNCATE server_seeds CASCADE",
                "UPDATE server_seeds SET seed_id = DEFAULT",
            ]
            for sql in statements {
                await Self.expectForeignKeyViolation { try await fixture.pool.query(PostgresQuery(sql)) }
            }
            // Balances still move: an update that keeps the id is untouched.
            try await fixture.pool.query("UPDATE accounts SET balance = balance WHERE kind = 'user'")
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func upgradeKeepsEveryRowAndTheLedgerKeepsWorking() async throws {
        try await WalletFixture.with(migratedUpTo: 3) { fixture in
            let pool = fixture.pool
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let context = WalletFixture.playerContext(user)
            let bet = WalletFixture.bet("0.10")
            let before = try await fixture.service.placeBet(.init(bet: bet), context: context)
            let transfers = "SELECT transfer_id, from_account, to_account, amount FROM transfers ORDER BY 1"
            let oldTransfers = try await LedgerModelTests.rows(pool, transfers)
            let oldBalances = try await LedgerModelTests.rows(
                pool, "SELECT account_id, coalesce(balance, -1) FROM accounts ORDER BY 1")

            let applied = try await Migrator(pool: pool, directory: WalletMain.migrationsDirectory).migrate()
            #expect(applied.map(\.version).filter { $0 < 5 } == [4], "later migrations may follow")
            let keys = try await pool.query(
                """
                SELECT count(*) FROM pg_constraint
                WHERE contype = 'f' AND conrelid IN ('transfers'::regclass, 'bets'::regclass)
                """)
            #expect(try keys[0].decode(Int64.self, at: 0) == 0)
            #expect(try await LedgerModelTests.rows(pool, transfers) == oldTransfers)
            #expect(
                try await LedgerModelTests.rows(
                    pool, "SELECT account_id, coalesce(balance, -1) FROM accounts ORDER BY 1")
                    == oldBalances)

            // A replay answers from the stored row, and new bets settle on the upgraded schema.
            #expect(try await fixture.service.placeBet(.init(bet: bet), context: context) == before)
            let request = WalletV1.PlaceBetsRequest(bets: (0..<5).map { _ in WalletFixture.bet("0.10") })
            let response = try await fixture.service.placeBets(request, context: context)
            #expect(response.results.allSatisfy { $0.status == .settled })
            try await fixture.expectLedgerInvariants()
        }
    }

    static func account(of user: RaveID, _ pool: PostgresPool) async throws -> Int64 {
        let rows = try await pool.query(
            PostgresQuery("SELECT account_id FROM accounts WHERE user_id = $1 AND kind = 'user'", [user]))
        return try rows[0].decode(Int64.self, at: 0)
    }

    static func unusedAccountID(_ pool: PostgresPool) async throws -> Int64 {
        let rows = try await pool.query("SELECT coalesce(max(account_id), 0) + 1000 FROM accounts")
        return try rows[0].decode(Int64.self, at: 0)
    }

    static func expectForeignKeyViolation(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("expected a foreign key violation, got success", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == "23503", "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected a foreign key violation, got \(error)", sourceLocation: sourceLocation)
        }
    }
}
