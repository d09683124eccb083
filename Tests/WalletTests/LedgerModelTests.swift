import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import Testing

@testable import Wallet

/// The one-row-per-transfer ledger: history read from both sides of each row, and the upgrade (migration 0003)
/// from the older transfers-plus-entries form.
@Suite struct LedgerModelTests {
    @Test func historyListsEachSideOfEveryMovementNewestFirst() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            let other = RaveID.random()
            try await fixture.deposit("10.00", to: user)
            try await fixture.deposit("3.00", to: other)
            try await fixture.deposit("2.00", to: user, game: "slot")
            let context = WalletFixture.playerContext(user)
            for _ in 0..<6 {
                _ = try await fixture.service.placeBet(.init(bet: WalletFixture.bet("0.50")), context: context)
            }
            var credit = WalletFixture.bet("0.40", game: "dice")
            credit.creditGameId = "slot"
            _ = try await fixture.service.placeBet(.init(bet: credit), context: context)
            let admin = WalletFixture.adminContext()
            _ = try await fixture.admin.withdraw(.init(transfer: Self.operation(user, "1.00")), context: admin)
            _ = try await fixture.admin.adjust(.init(transfer: Self.operation(user, "-0.25")), context: admin)
            _ = try await fixture.merge.mergeUsers(
                .init(mergeId: "m-history", sourceUserId: other.hex, targetUserId: user.hex),
                context: WalletFixture.serviceContext())

            let all = try await fixture.service.listTransactions(.init(pageSize: 100), context: context)
            #expect(all.nextPageToken.isEmpty)
            var paged: [WalletV1.LedgerEntry] = []
            var token = ""
            repeat {
                let page = try await fixture.service.listTransactions(
                    .init(pageSize: 3, pageToken: token), context: context)
                paged += page.entries
                token = page.nextPageToken
            } while !token.isEmpty
            #expect(paged == all.entries)

            // Every side of a row touching the user's accounts is one entry.
            let sides = try await fixture.pool.query(
                """
                SELECT (SELECT count(*) FROM transfers t JOIN accounts a ON a.account_id = t.from_account
                        WHERE a.user_id = $1)
                    + (SELECT count(*) FROM transfers t JOIN accounts a ON a.account_id = t.to_account
                        WHERE a.user_id = $1)
                """, [user])
            #expect(Int64(all.entries.count) == (try sides[0].decode(Int64.self, at: 0)))
            #expect(Set(all.entries.map(\.code)).isSuperset(of: ["deposit", "bet_wager", "withdrawal", "adjustment"]))
            #expect(all.entries.first?.code == "merge" && all.entries.first?.amount == "3.00")

            // Walking back from the newest entry of each account, balance_after minus the amount is the
            // balance_after of the entry before it, down to zero.
            for game in ["", "slot"] {
                let entries = all.entries.filter { $0.gameId == game }
                for (newer, older) in zip(entries, entries.dropFirst()) {
                    #expect(Self.cents(newer.balanceAfter) - Self.cents(newer.amount) == Self.cents(older.balanceAfter))
                }
                if let oldest = entries.last { #expect(oldest.balanceAfter == oldest.amount) }
            }
            let wallet = try await fixture.service.getWallet(.init(), context: context)
            for balance in wallet.balances {
                #expect(all.entries.first { $0.gameId == balance.gameId }?.balanceAfter == balance.amount)
            }
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func upgradeFoldsEntriesIntoTransfersWithoutLosingMoney() async throws {
        try await WalletFixture.with(migratedUpTo: 2) { fixture in
            let pool = fixture.pool
            let player = RaveID.random()
            let ledger = try await OldLedger.seed(pool, player: player)
            let oldSums = try await Self.rows(
                pool, "SELECT account_id, sum(amount)::bigint FROM ledger_entries GROUP BY 1 ORDER BY 1")
            let oldBalances = try await Self.rows(
                pool, "SELECT account_id, coalesce(balance, -1) FROM accounts ORDER BY 1")
            let oldEntries = try await Self.rows(
                pool, "SELECT account_id, amount, coalesce(balance_after, -1) FROM ledger_entries ORDER BY entry_id")

            let applied = try await Migrator(pool: pool, directory: WalletMain.migrationsDirectory).migrate()
            #expect(applied.map(\.version).filter { $0 < 5 } == [3, 4], "later migrations may follow")

            let newSums = try await Self.rows(
                pool,
                """
                SELECT account_id, sum(amount)::bigint FROM (
                    SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers
                ) AS side (account_id, amount) GROUP BY 1 ORDER BY 1
                """)
            #expect(newSums == oldSums)
            #expect(
                try await Self.rows(pool, "SELECT account_id, coalesce(balance, -1) FROM accounts ORDER BY 1")
                    == oldBalances)
            // Each row's two sides, in id order, are the old entries in their order, balance_after included.
            let newEntries = try await Self.rows(
                pool,
                """
                SELECT e.account_id, e.amount, e.balance_after FROM transfers t CROSS JOIN LATERAL (VALUES
                    (0, t.from_account, -t.amount, coalesce(t.from_balance_after, -1)),
                    (1, t.to_account, t.amount, coalesce(t.to_balance_after, -1))) AS e (side, account_id, amount,
                        balance_after)
                ORDER BY t.transfer_id, e.side
                """)
            #expect(newEntries == oldEntries)
            #expect(try await fixture.balance(of: player) == ledger.playerBalance)
            try await fixture.expectLedgerInvariants()

            // The upgraded ledger keeps working: a bet after the upgrade pages after the moved history.
            let context = WalletFixture.playerContext(player)
            _ = try await fixture.service.placeBet(.init(bet: WalletFixture.bet("0.10")), context: context)
            let history = try await fixture.service.listTransactions(.init(pageSize: 100), context: context)
            #expect(history.entries.count >= ledger.playerEntries + 1)
            #expect(history.entries.suffix(ledger.playerEntries).last?.code == "deposit")
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func upgradeRefusesEntriesThatDoNotMatchTheirTransfer() async throws {
        try await WalletFixture.with(migratedUpTo: 2) { fixture in
            let pool = fixture.pool
            _ = try await OldLedger.seed(pool, player: RaveID.random())
            try await pool.query(
                "DELETE FROM ledger_entries WHERE entry_id = (SELECT max(entry_id) FROM ledger_entries)")
            await #expect(throws: PostgresError.self) {
                try await Migrator(pool: pool, directory: WalletMain.migrationsDirectory).migrate()
            }
            // Nothing after 2 was applied (the fixture's merged_users aside).
            let version = try await pool.query(
                "SELECT max(version) FROM schema_migrations WHERE name <> 'merged_users'")
            #expect(try version[0].decode(Int64.self, at: 0) == 2)
            let entries = try await pool.query("SELECT count(*) FROM ledger_entries")
            #expect(try entries[0].decode(Int64.self, at: 0) > 0)
        }
    }

    static func operation(_ user: RaveID, _ amount: String) -> WalletV1.OperatorTransfer {
        WalletV1.OperatorTransfer(
            operationId: RaveID.random().hex, userId: user.hex, currency: "USD", economy: .real, amount: amount)
    }

    static func cents(_ amount: String) -> Int64 {
        Int64(amount.replacingOccurrences(of: ".", with: "")) ?? .min
    }

    static func rows(_ pool: PostgresPool, _ sql: String) async throws -> [[Int64]] {
        let rows = try await pool.query(sql)
        return try rows.map { row in try rows.columns.indices.map { try row.decode(Int64.self, at: $0) } }
    }
}

/// A ledger written the way migrations 0001–0002 and the code before 0003 wrote it: a transfer row plus its two
/// entries from one statement.
enum OldLedger {
    /// The transfer statement as it was before migration 0003.
    static let transferSQL = """
        WITH debited AS (
            UPDATE accounts SET balance = balance - $5 WHERE account_id = $3 AND balance IS NOT NULL
            RETURNING balance),
        credited AS (
            UPDATE accounts SET balance = balance + $5 WHERE account_id = $4 AND balance IS NOT NULL
            RETURNING balance),
        transfer AS (
            INSERT INTO transfers (transfer_id, code, debit_account, credit_account, amount, user_id, bet_id,
                reference)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING transfer_id)
        INSERT INTO ledger_entries (transfer_id, account_id, amount, balance_after)
        SELECT transfer_id, $3, -$5::bigint, (SELECT balance FROM debited) FROM transfer
        UNION ALL
        SELECT transfer_id, $4, $5, (SELECT balance FROM credited) FROM transfer
        """

    /// Deposits, a winning and a losing bet, a withdrawal, a merge and an adjustment, in the old form; returns
    /// the player's balance and how many entries its accounts have.
    static func seed(_ pool: PostgresPool, player: RaveID) async throws -> (playerBalance: Int64, playerEntries: Int) {
        func account(_ kind: String, _ user: RaveID, game: String = "") async throws -> Int64 {
            let rows = try await pool.query(
                PostgresQuery(
                    """
                    INSERT INTO accounts (kind, user_id, game_id, currency, economy, balance)
                    VALUES ($1, $2, $3, 'USD', 1, CASE WHEN $1 IN ('user', 'credit') THEN 0 END)
                    RETURNING account_id
                    """, [kind, user, game]))
            return try rows[0].decode(Int64.self, at: 0)
        }
        let source = RaveID.random()
        let external = try await account("external", AccountKey.noUser)
        let house = try await account("house", AccountKey.noUser, game: "dice")
        let wallet = try await account("user", player)
        let credits = try await account("credit", player, game: "slot")
        let merged = try await account("user", source)
        let bet = RaveID.random()
        let moves: [(String, Int64, Int64, Int64, RaveID?)] = [
            ("deposit", external, wallet, 1000, nil), ("deposit", external, merged, 500, nil),
            ("deposit", external, credits, 200, nil), ("bet_wager", wallet, house, 100, bet),
            ("bet_payout", house, wallet, 190, bet), ("bet_wager", credits, house, 50, RaveID.random()),
            ("withdrawal", wallet, external, 300, nil), ("merge", merged, wallet, 500, nil),
            ("adjustment", external, wallet, 7, nil),
        ]
        for (code, from, to, amount, betID) in moves {
            try await pool.query(
                PostgresQuery(transferSQL, [RaveID.random(), code, from, to, amount, player, betID, ""]))
        }
        return (1000 - 100 + 190 - 300 + 500 + 7, 8)
    }
}
