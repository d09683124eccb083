import RaveCrypto
import RaveMessages
import RavePostgres

/// Bets and the provably fair server seeds they draw from.
struct BetStore: Sendable {
    /// Locks the user's active seed, creating it on first use, and reads it with its next nonce; the row lock
    /// orders concurrent bets of one user.
    static let lockSeed = PostgresStatement(
        name: "wallet_lock_seed",
        sql: """
            INSERT INTO server_seeds (user_id, seed, seed_hash, next_nonce) VALUES ($1, $2, $3, 0)
            ON CONFLICT (user_id) WHERE revealed_at IS NULL DO UPDATE SET next_nonce = server_seeds.next_nonce
            RETURNING seed_id, seed, seed_hash, next_nonce
            """)
    /// Moves a locked seed's next nonce past the nonces its bets took.
    static let advanceNonce = PostgresStatement(
        name: "wallet_advance_nonce", sql: "UPDATE server_seeds SET next_nonce = $2 WHERE seed_id = $1")
    static let activeSeed = PostgresStatement(
        name: "wallet_active_seed",
        sql: """
            INSERT INTO server_seeds (user_id, seed, seed_hash, next_nonce) VALUES ($1, $2, $3, 0)
            ON CONFLICT (user_id) WHERE revealed_at IS NULL DO UPDATE SET next_nonce = server_seeds.next_nonce
            RETURNING seed_hash, next_nonce
            """)
    static let revealSeed = PostgresStatement(
        name: "wallet_reveal_seed",
        sql: """
            UPDATE server_seeds SET revealed_at = now() WHERE user_id = $1 AND revealed_at IS NULL
            RETURNING seed, seed_hash
            """)
    /// Stores a bet unless its id was used before; no row back means "replay: read the stored one".
    static let insertBet = PostgresStatement(
        name: "wallet_insert_bet",
        sql: """
            INSERT INTO bets (user_id, bet_id, request_hash, game_id, kind, status, currency, economy, wager,
                payout, seed_id, nonce, client_seed, result)
            VALUES ($1, $2, encode($3::bytea, 'hex'), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            ON CONFLICT (user_id, bet_id) DO NOTHING
            RETURNING bet_id
            """)
    static let selectBet = PostgresStatement(
        name: "wallet_select_bet",
        sql: "SELECT decode(request_hash, 'hex'), result FROM bets WHERE user_id = $1 AND bet_id = $2")
    static let selectBetForVerify = PostgresStatement(
        name: "wallet_select_bet_for_verify",
        sql: """
            SELECT b.result, b.game_id, b.wager, b.currency, b.client_seed, b.nonce, s.seed, s.seed_hash,
                s.revealed_at IS NOT NULL
            FROM bets b JOIN server_seeds s ON s.seed_id = b.seed_id
            WHERE b.user_id = $1 AND b.bet_id = $2
            """)

    /// A fresh server seed: 32 bytes from OpenSSL's CSPRNG and the hex SHA-256 that commits to it.
    static func newSeed() throws(CryptoError) -> (seed: [UInt8], hash: String) {
        let seed = try SecureRandom.bytes(count: 32)
        return (seed, Hex.encode(Digest.sha256(seed)))
    }

    /// The user's active seed, locked until the transaction ends (created on first use).
    func lockSeed(user: RaveID, on database: some PostgresQueryable) async throws -> RoundPlay.Seed {
        let fresh = try Self.newSeed()
        let rows = try await database.execute(Self.lockSeed, [user, fresh.seed, fresh.hash])
        guard let row = rows.first else { throw PostgresError(.client, "locking the active seed returned no row") }
        return RoundPlay.Seed(
            id: try row.decode(at: 0), bytes: try row.decode(at: 1), hash: try row.decode(at: 2),
            nextNonce: try row.decode(at: 3))
    }

    func advanceNonce(seedID: Int64, to nextNonce: Int64, on database: some PostgresQueryable) async throws {
        _ = try await database.execute(Self.advanceNonce, [seedID, nextNonce])
    }

    /// The hash of the user's active seed and its next nonce (creating the seed on first use).
    func activeSeed(user: RaveID, on database: some PostgresQueryable) async throws -> (hash: String, nonce: Int64) {
        let fresh = try Self.newSeed()
        let rows = try await database.execute(Self.activeSeed, [user, fresh.seed, fresh.hash])
        guard let row = rows.first else { throw PostgresError(.client, "reading the active seed returned no row") }
        return (try row.decode(at: 0), try row.decode(at: 1))
    }

    /// Reveals the active seed (if any) and starts a new one, in one transaction.
    func rotateSeed(
        user: RaveID, on pool: PostgresPool
    ) async throws -> (revealed: WalletV1.RevealedSeed?, next: String) {
        try await pool.transaction { transaction in
            let revealed = try await transaction.execute(Self.revealSeed, [user]).first.map { row in
                WalletV1.RevealedSeed(
                    serverSeed: Hex.encode(try row.decode([UInt8].self, at: 0)),
                    serverSeedHash: try row.decode(String.self, at: 1))
            }
            let next = try await activeSeed(user: user, on: transaction)
            return (revealed, next.hash)
        }
    }

    /// Inserts the bet row (`seedID` and `nonce` nil for a bet that drew nothing); false when the id was already
    /// taken (the caller reads the stored bet instead).
    func insert(
        _ bet: PreparedBet, status: String, payout: Int64, seedID: Int64?, nonce: Int64?, result: [UInt8],
        on database: some PostgresQueryable
    ) async throws -> Bool {
        let rows = try await database.execute(
            Self.insertBet,
            [
                bet.userID, bet.betID, bet.requestHash, bet.gameID, bet.kind.rawValue, status, bet.currency.code,
                bet.economy.rawValue, bet.wager, payout, seedID, nonce, bet.clientSeed, result,
            ])
        return !rows.isEmpty
    }

    /// The stored request hash and result of `bet`'s id, or nil when the id was never stored.
    func stored(_ bet: PreparedBet, on database: some PostgresQueryable) async throws -> RoundPlay.StoredBet? {
        guard let row = try await database.execute(Self.selectBet, [bet.userID, bet.betID]).first else { return nil }
        return (try row.decode(at: 0), try row.decode(at: 1))
    }

    /// A settled bet with what verifying it needs: its stored result, game, wager and currency, and its seed.
    struct SettledBet: Sendable {
        var result: [UInt8]
        var gameID: String
        var wager: Int64
        var currency: String
        var clientSeed: String
        var nonce: Int64
        var seed: [UInt8]
        var seedHash: String
        var revealed: Bool
    }

    /// The user's settled bet `betID`, nil when the user has none by that id.
    func settledBet(user: RaveID, betID: RaveID, on database: some PostgresQueryable) async throws -> SettledBet? {
        guard let row = try await database.execute(Self.selectBetForVerify, [user, betID]).first else { return nil }
        return SettledBet(
            result: try row.decode([UInt8].self, at: 0), gameID: try row.decode(String.self, at: 1),
            wager: try row.decode(Int64.self, at: 2), currency: try row.decode(String.self, at: 3),
            clientSeed: try row.decode(String.self, at: 4), nonce: try row.decode(Int64.self, at: 5),
            seed: try row.decode([UInt8].self, at: 6), seedHash: try row.decode(String.self, at: 7),
            revealed: try row.decode(Bool.self, at: 8))
    }
}
