import RaveMerges
import RavePostgres

/// Reads an exported account's money (docs/wallet.md, "Exporting an account"): the rows an erasure of the user
/// anonymises, amounts in minor units.
///
/// A server seed's bytes only once it is revealed: an active seed shows its
/// hash alone, as `GetServerSeed` does, so an export never lets anyone predict the next bets.
enum ExportStore {
    private static let economy = "CASE economy WHEN 1 THEN 'real' WHEN 2 THEN 'sandbox' ELSE 'unknown' END AS economy"

    /// The sections, in page order.
    static let sections: [ExportSection] = [
        ExportSection(
            "accounts", service: "wallet",
            sql: """
                SELECT a.account_id, a.kind, a.user_id, a.game_id, a.currency, c.decimals::bigint AS decimals,
                       \(economy), a.balance, a.created_at
                FROM accounts a JOIN currencies c ON c.code = a.currency
                WHERE a.user_id = ANY($1::uuid[])
                """,
            keys: [.integer("account_id")]
        ) { row in
            var record = ExportRecord()
            record.int64("account_id", try row.decode(column: "account_id"))
            record.enumeration("kind", try row.decode(column: "kind"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.string("game_id", try row.decode(column: "game_id"))
            record.string("currency", try row.decode(column: "currency"))
            record.int("currency_decimals", Int(try row.decode(Int64.self, column: "decimals")))
            record.enumeration("economy", try row.decode(column: "economy"))
            record.int64("balance", try row.decode(column: "balance"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection(
            "ledger", service: "wallet",
            sql: """
                SELECT t.transfer_id, t.code, t.from_account, t.to_account, t.amount, t.from_balance_after,
                       t.to_balance_after, t.user_id, t.bet_id, t.reference, t.created_at
                FROM transfers t
                WHERE t.from_account IN (SELECT account_id FROM accounts WHERE user_id = ANY($1::uuid[]))
                   OR t.to_account IN (SELECT account_id FROM accounts WHERE user_id = ANY($1::uuid[]))
                   OR t.user_id = ANY($1::uuid[])
                """,
            keys: [.integer("transfer_id")]
        ) { row in
            var record = ExportRecord()
            record.int64("transfer_id", try row.decode(column: "transfer_id"))
            record.enumeration("code", try row.decode(column: "code"))
            record.int64("from_account_id", try row.decode(column: "from_account"))
            record.int64("to_account_id", try row.decode(column: "to_account"))
            record.int64("amount", try row.decode(column: "amount"))
            record.int64("from_balance_after", try row.decode(column: "from_balance_after"))
            record.int64("to_balance_after", try row.decode(column: "to_balance_after"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.id("bet_id", try row.decode(column: "bet_id"))
            record.string("reference", try row.decode(column: "reference"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection(
            "bets", service: "wallet",
            sql: """
                SELECT b.user_id, b.bet_id, b.request_hash, b.game_id, b.kind, b.status, b.currency,
                       CASE b.economy WHEN 1 THEN 'real' WHEN 2 THEN 'sandbox' ELSE 'unknown' END AS economy,
                       b.wager, b.payout, b.seed_id, b.nonce, b.client_seed, b.result, b.created_at,
                       s.seed_hash AS server_seed_hash, s.revealed_at IS NOT NULL AS revealed
                FROM bets b LEFT JOIN server_seeds s ON s.seed_id = b.seed_id
                WHERE b.user_id = ANY($1::uuid[])
                """,
            keys: [.id("user_id"), .id("bet_id")]
        ) { row in
            var record = ExportRecord()
            record.id("user_id", try row.decode(column: "user_id"))
            record.id("bet_id", try row.decode(column: "bet_id"))
            record.string("request_hash", try row.decode(column: "request_hash"))
            record.string("game_id", try row.decode(column: "game_id"))
            record.enumeration("kind", try row.decode(column: "kind"))
            record.enumeration("status", try row.decode(column: "status"))
            record.string("currency", try row.decode(column: "currency"))
            record.enumeration("economy", try row.decode(column: "economy"))
            record.int64("wager", try row.decode(column: "wager"))
            record.int64("payout", try row.decode(column: "payout"))
            record.int64("seed_id", try row.decode(column: "seed_id"))
            record.int64("nonce", try row.decode(column: "nonce"))
            record.string("client_seed", try row.decode(column: "client_seed"))
            record.string("server_seed_hash", try row.decode(column: "server_seed_hash"))
            record.bool("server_seed_revealed", try row.decode(column: "revealed"))
            record.bytes("result", try row.decode(column: "result"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection(
            "server_seeds", service: "wallet",
            sql: """
                SELECT seed_id, user_id, CASE WHEN revealed_at IS NOT NULL THEN seed END AS seed, seed_hash,
                       next_nonce, revealed_at, created_at
                FROM server_seeds WHERE user_id = ANY($1::uuid[])
                """,
            keys: [.integer("seed_id")]
        ) { row in
            var record = ExportRecord()
            record.int64("seed_id", try row.decode(column: "seed_id"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.string("seed_hash", try row.decode(column: "seed_hash"))
            record.bytes("seed", try row.decode(column: "seed"))
            record.int64("next_nonce", try row.decode(column: "next_nonce"))
            record.time("revealed_at", try row.decode(column: "revealed_at"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection.merges(
            service: "wallet", table: "merges", source: "source_user_id", target: "target_user_id",
            time: ("created_at", "merged_at")),
    ]
}
