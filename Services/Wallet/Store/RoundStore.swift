import RavePostgres

/// The SQL of a group-commit round settled in bulk: one pipelined round trip reads and locks what the round's
/// bets touch, a second one writes every row of the round and commits.
///
/// Each statement takes whole columns as arrays (`unnest`; RavePostgres writes an array parameter in one pass),
/// so its cost per bet is a few rows of server work, not a round trip. Arrays carry no NULLs here: -1 stands for
/// "none" where a column may be NULL (seed ids, nonces and balances are never negative). Byte columns travel as one bytea of all their values end to end, cut apart
/// with `substring` (no hex to write in Swift and decode in SQL); the request hash column stays hex text, which
/// PostgreSQL writes (`encode`), so wallets of earlier releases read and write the same rows during a rolling
/// update. A fresh seed still travels as hex.
enum RoundStore {
    /// Locks (or creates) the active seed of every user: the row lock orders this round after any other
    /// transaction that uses the same seeds, in this process or another.
    static func lockSeeds(users: [RaveID], freshSeeds: [String], freshHashes: [String]) -> PostgresQuery {
        PostgresQuery(lockSeedsStatement, [users, freshSeeds, freshHashes])
    }

    /// Locks the player accounts the round's bets draw from, in account id order, and reads their balances;
    /// `position` is the 1-based index of the key in the input.
    static func lockAccounts(_ keys: [AccountKey]) -> PostgresQuery {
        PostgresQuery(
            lockAccountsStatement,
            [
                keys.map { $0.kind.rawValue }, keys.map { $0.userID }, keys.map { $0.gameID },
                keys.map { $0.currency }, keys.map { $0.economy },
            ])
    }

    /// The bets of the round already stored (replays), read after the seed locks so nothing of this user can be
    /// committed in between.
    static func storedBets(users: [RaveID], betIDs: [RaveID]) -> PostgresQuery {
        PostgresQuery(storedBetsStatement, [users, betIDs])
    }

    /// Moves each seed's next nonce past the nonces the round used.
    static func advanceNonces(seedIDs: [Int64], nextNonces: [Int64]) -> PostgresQuery {
        PostgresQuery(advanceNoncesStatement, [seedIDs, nextNonces])
    }

    /// One row per transfer of the round, column by column.
    struct Transfers {
        var codes: [String] = []
        var fromAccounts: [Int64] = []
        var toAccounts: [Int64] = []
        var amounts: [Int64] = []
        var userIDs: [RaveID] = []
        var betIDs: [RaveID] = []
        /// -1 for accounts without a running balance (house, external).
        var fromBalancesAfter: [Int64] = []
        var toBalancesAfter: [Int64] = []

        var count: Int { codes.count }

        /// Room for `count` transfers, so a round's columns are allocated once instead of doubling as they fill.
        mutating func reserveCapacity(_ count: Int) {
            codes.reserveCapacity(count)
            fromAccounts.reserveCapacity(count)
            toAccounts.reserveCapacity(count)
            amounts.reserveCapacity(count)
            userIDs.reserveCapacity(count)
            betIDs.reserveCapacity(count)
            fromBalancesAfter.reserveCapacity(count)
            toBalancesAfter.reserveCapacity(count)
        }

        mutating func append(
            code: String, from: Int64, to: Int64, amount: Int64, userID: RaveID, betID: RaveID,
            fromBalanceAfter: Int64?, toBalanceAfter: Int64?
        ) {
            codes.append(code)
            fromAccounts.append(from)
            toAccounts.append(to)
            amounts.append(amount)
            userIDs.append(userID)
            betIDs.append(betID)
            fromBalancesAfter.append(fromBalanceAfter ?? -1)
            toBalancesAfter.append(toBalanceAfter ?? -1)
        }

        mutating func removeLast(_ count: Int) {
            codes.removeLast(count)
            fromAccounts.removeLast(count)
            toAccounts.removeLast(count)
            amounts.removeLast(count)
            userIDs.removeLast(count)
            betIDs.removeLast(count)
            fromBalancesAfter.removeLast(count)
            toBalancesAfter.removeLast(count)
        }
    }

    /// Inserts the round's transfers, one row each carrying both sides; ids are taken in input order, so an
    /// account's history reads in the order its balance moved.
    static func insertTransfers(_ transfers: Transfers) -> PostgresQuery {
        PostgresQuery(
            insertTransfersStatement,
            [
                transfers.codes, transfers.fromAccounts, transfers.toAccounts, transfers.amounts,
                transfers.fromBalancesAfter, transfers.toBalancesAfter, transfers.userIDs, transfers.betIDs,
            ])
    }

    /// Adds each account's net movement of the round to its balance; `player_balance_not_negative` still
    /// guards the result in the database.
    static func moveBalances(accountIDs: [Int64], deltas: [Int64]) -> PostgresQuery {
        PostgresQuery(moveBalancesStatement, [accountIDs, deltas])
    }

    /// One row per bet of the round, column by column.
    struct Bets {
        var userIDs: [RaveID] = []
        var betIDs: [RaveID] = []
        /// Every bet's 32-byte request hash, end to end.
        var requestHashes: [UInt8] = []
        var gameIDs: [String] = []
        var kinds: [String] = []
        var statuses: [String] = []
        var currencies: [String] = []
        var economies: [Int32] = []
        var wagers: [Int64] = []
        var payouts: [Int64] = []
        /// -1 for failed bets, which drew nothing.
        var seedIDs: [Int64] = []
        var nonces: [Int64] = []
        var clientSeeds: [String] = []
        /// Every bet's encoded BetResult, end to end; `resultStarts` (1-based, as `substring` counts) and
        /// `resultLengths` cut them apart.
        var results: [UInt8] = []
        var resultStarts: [Int32] = []
        var resultLengths: [Int32] = []

        var count: Int { betIDs.count }

        /// Room for `count` bets (results at a typical size), so a round's columns are allocated once.
        mutating func reserveCapacity(_ count: Int) {
            userIDs.reserveCapacity(count)
            betIDs.reserveCapacity(count)
            requestHashes.reserveCapacity(count * RoundStore.requestHashSize)
            gameIDs.reserveCapacity(count)
            kinds.reserveCapacity(count)
            statuses.reserveCapacity(count)
            currencies.reserveCapacity(count)
            economies.reserveCapacity(count)
            wagers.reserveCapacity(count)
            payouts.reserveCapacity(count)
            seedIDs.reserveCapacity(count)
            nonces.reserveCapacity(count)
            clientSeeds.reserveCapacity(count)
            results.reserveCapacity(count * 320)
            resultStarts.reserveCapacity(count)
            resultLengths.reserveCapacity(count)
        }

        mutating func append(
            _ bet: PreparedBet, status: String, payout: Int64, seedID: Int64?, nonce: Int64?, result: [UInt8]
        ) {
            userIDs.append(bet.userID)
            betIDs.append(bet.betID)
            precondition(bet.requestHash.count == RoundStore.requestHashSize, "a request hash is 32 bytes")
            requestHashes.append(contentsOf: bet.requestHash)
            gameIDs.append(bet.gameID)
            kinds.append(bet.kind.rawValue)
            statuses.append(status)
            currencies.append(bet.currency.code)
            economies.append(bet.economy.rawValue)
            wagers.append(bet.wager)
            payouts.append(payout)
            seedIDs.append(seedID ?? -1)
            nonces.append(nonce ?? -1)
            clientSeeds.append(bet.clientSeed)
            resultStarts.append(Int32(results.count + 1))
            resultLengths.append(Int32(result.count))
            results.append(contentsOf: result)
        }

        /// Row `row`'s seed id; nil for a bet that drew nothing.
        func seedID(at row: Int) -> Int64? { seedIDs[row] == -1 ? nil : seedIDs[row] }

        /// Row `row`'s nonce; nil for a bet that drew nothing.
        func nonce(at row: Int) -> Int64? { nonces[row] == -1 ? nil : nonces[row] }

        /// Row `row`'s encoded BetResult.
        func result(at row: Int) -> [UInt8] {
            let start = Int(resultStarts[row]) - 1
            return Array(results[start..<start + Int(resultLengths[row])])
        }

        mutating func removeLast(_ count: Int) {
            userIDs.removeLast(count)
            betIDs.removeLast(count)
            requestHashes.removeLast(count * RoundStore.requestHashSize)
            gameIDs.removeLast(count)
            kinds.removeLast(count)
            statuses.removeLast(count)
            currencies.removeLast(count)
            economies.removeLast(count)
            wagers.removeLast(count)
            payouts.removeLast(count)
            seedIDs.removeLast(count)
            nonces.removeLast(count)
            clientSeeds.removeLast(count)
            results.removeLast(Int(resultLengths.suffix(count).reduce(0, +)))
            resultStarts.removeLast(count)
            resultLengths.removeLast(count)
        }
    }

    /// Inserts the round's bets; an id already stored (a replay the round did not look for, or one stored
    /// meanwhile by another process) fails the statement on `bets_pkey`, and with it the round, which is then
    /// settled again (`GroupCommitter`).
    static func insertBets(_ bets: Bets) -> PostgresQuery {
        PostgresQuery(
            insertBetsStatement,
            [
                bets.userIDs, bets.betIDs, bets.requestHashes, bets.gameIDs, bets.kinds, bets.statuses,
                bets.currencies, bets.economies, bets.wagers, bets.payouts, bets.seedIDs, bets.nonces,
                bets.clientSeeds, bets.results, bets.resultStarts, bets.resultLengths,
            ])
    }

    /// A SHA-256 digest's size: each bet's slice of `Bets.requestHashes`.
    static let requestHashSize = 32
}

// MARK: - SQL

/// The round's statements, named: a connection parses and plans each once, after which a round only binds and
/// executes them. Their text is fixed (whole columns travel as arrays), so one plan serves rounds of any size.
extension RoundStore {
    /// Opens a round's transaction (named too: a round then sends no SQL text at all once the connection knows it).
    static let begin = PostgresQuery(
        PostgresStatement(name: "wallet_round_begin", sql: "BEGIN ISOLATION LEVEL READ COMMITTED"))

    /// Makes the round's statements run on their generic plans, for this transaction only.
    ///
    /// Left to choose, PostgreSQL plans a statement anew on every execution (a custom plan) while that looks
    /// cheaper than its generic plan, and a custom plan sees the arrays' real lengths: a round that locks fewer
    /// accounts or seeds than the generic plan's guess of ten (a round of a few busy players) was planned again
    /// every time, about 5 % of the server's CPU per bet in batches. The generic plans are the plans these
    /// statements are written for (docs/wallet.md, "Benchmarks").
    static let genericPlans = PostgresQuery(
        PostgresStatement(name: "wallet_round_generic_plans", sql: "SET LOCAL plan_cache_mode = force_generic_plan"))

    /// Ends a round's transaction; the round's results are returned only after it.
    static let commit = PostgresQuery(PostgresStatement(name: "wallet_round_commit", sql: "COMMIT"))

    static let lockSeedsStatement = PostgresStatement(
        name: "wallet_round_lock_seeds",
        sql: """
            INSERT INTO server_seeds (user_id, seed, seed_hash, next_nonce)
            SELECT user_id, decode(seed, 'hex'), seed_hash, 0
            FROM unnest($1::uuid[], $2::text[], $3::text[]) AS input (user_id, seed, seed_hash)
            ORDER BY user_id
            ON CONFLICT (user_id) WHERE revealed_at IS NULL DO UPDATE SET next_nonce = server_seeds.next_nonce
            RETURNING user_id, seed_id, seed, seed_hash, next_nonce
            """)

    static let lockAccountsStatement = PostgresStatement(
        name: "wallet_round_lock_accounts",
        sql: """
            SELECT a.account_id, a.balance, k.position
            FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::int4[]) WITH ORDINALITY
                AS k (kind, user_id, game_id, currency, economy, position)
            JOIN accounts a ON a.user_id = k.user_id AND a.kind = k.kind AND a.game_id = k.game_id
                AND a.currency = k.currency AND a.economy = k.economy
            ORDER BY a.account_id
            FOR UPDATE OF a
            """)

    // A probe by primary key per input pair. The LIMIT keeps the planner from flattening the subquery into a join,
    // so a generic plan made while `bets` was small (a hash join over a scan of `bets`) cannot outlive the table's
    // growth: the plan stays index probes whatever the statistics said when it was made.
    static let storedBetsStatement = PostgresStatement(
        name: "wallet_round_stored_bets",
        sql: """
            SELECT k.user_id, k.bet_id, decode(b.request_hash, 'hex'), b.result
            FROM unnest($1::uuid[], $2::uuid[]) AS k (user_id, bet_id)
            CROSS JOIN LATERAL (
                SELECT request_hash, result FROM bets
                WHERE bets.user_id = k.user_id AND bets.bet_id = k.bet_id
                LIMIT 1) b
            """)

    static let advanceNoncesStatement = PostgresStatement(
        name: "wallet_round_advance_nonces",
        sql: """
            UPDATE server_seeds s SET next_nonce = d.next_nonce
            FROM unnest($1::int8[], $2::int8[]) AS d (seed_id, next_nonce)
            WHERE s.seed_id = d.seed_id
            """)

    static let insertTransfersStatement = PostgresStatement(
        name: "wallet_round_insert_transfers",
        sql: """
            INSERT INTO transfers (code, from_account, to_account, amount, from_balance_after, to_balance_after,
                user_id, bet_id)
            SELECT code, from_account, to_account, amount, nullif(from_after, -1), nullif(to_after, -1), user_id,
                bet_id
            FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::uuid[],
                $8::uuid[]) WITH ORDINALITY
                AS t (code, from_account, to_account, amount, from_after, to_after, user_id, bet_id, position)
            ORDER BY position
            """)

    static let moveBalancesStatement = PostgresStatement(
        name: "wallet_round_move_balances",
        sql: """
            UPDATE accounts a SET balance = a.balance + d.delta
            FROM unnest($1::int8[], $2::int8[]) AS d (account_id, delta)
            WHERE a.account_id = d.account_id
            """)

    static let insertBetsStatement = PostgresStatement(
        name: "wallet_round_insert_bets",
        sql: """
            INSERT INTO bets (user_id, bet_id, request_hash, game_id, kind, status, currency, economy, wager,
                payout, seed_id, nonce, client_seed, result)
            SELECT user_id, bet_id, encode(substring($3::bytea FROM (position * 32 - 31)::int4 FOR 32), 'hex'),
                game_id, kind, status, currency, economy, wager, payout, nullif(seed_id, -1), nullif(nonce, -1),
                client_seed, substring($14::bytea FROM result_start FOR result_length)
            FROM unnest($1::uuid[], $2::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int4[],
                $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::text[], $15::int4[], $16::int4[])
                WITH ORDINALITY
                AS t (user_id, bet_id, game_id, kind, status, currency, economy, wager, payout, seed_id, nonce,
                    client_seed, result_start, result_length, position)
            """)
}
