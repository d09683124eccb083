import RaveCrypto
import RaveMessages
import RavePostgres

/// Bets and the provably fair server seeds they draw from.
struct BetStore: Sendable {
    /// A reserved draw: the seed's id and bytes, its public hash, and the nonce this bet uses.
    struct Draw: Sendable {
        var seedID: Int64
        var seed: [UInt8]
        var seedHash: String
        var nonce: Int64
    }

    /// Takes the next nonce of the user's active seed, creating the seed on first use; the row lock this takes
    /// orders concurrent bets of one user.
    static let reserveNonce = PostgresStatement(
        name: "wallet_reserve_nonce",
        sql: """
            INSERT INTO server_seeds (user_id, seed, seed_hash, next_nonce) VALUES ($1, $2, $3, 1)
            ON CONFLICT (user_id) WHERE revealed_at IS NULL DO UPDATE SET next_nonce = server_seeds.next_nonce + 1
            RETURNING seed_id, seed, seed_hash, next_nonce - 1
            """)
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

    func reserveDraw(user: RaveID, on database: some PostgresQueryable) async throws -> Draw {
        let fresh = try Self.newSeed()
        let rows = try await database.execute(Self.reserveNonce, [user, fresh.seed, fresh.hash])
        guard let row = rows.first else { throw PostgresError(.client, "reserving a nonce returned no row") }
        return Draw(
            seedID: try row.decode(at: 0), seed: try row.decode(at: 1), seedHash: try row.decode(at: 2),
            nonce: try row.decode(at: 3))
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

    /// Inserts the bet row; false when the id was already taken (the caller reads the stored bet instead).
    func insert(
        _ bet: PreparedBet, status: String, payout: Int64, draw: Draw?, result: WalletV1.BetResult,
        on database: some PostgresQueryable
    ) async throws -> Bool {
        let rows = try await database.execute(
            Self.insertBet,
            [
                bet.userID, bet.betID, bet.requestHash, bet.gameID, bet.kind.rawValue, status, bet.currency.code,
                bet.economy.rawValue, bet.wager, payout, draw?.seedID, draw?.nonce, bet.clientSeed,
                result.protobufBytes(),
            ])
        return !rows.isEmpty
    }

    /// The stored result of a bet id, checking that the replay asks for the same bet.
    func storedResult(of bet: PreparedBet, on database: some PostgresQueryable) async throws -> WalletV1.BetResult {
        guard let row = try await database.execute(Self.selectBet, [bet.userID, bet.betID]).first else {
            throw PostgresError(.client, "bet \(bet.betID) vanished")
        }
        guard try row.decode([UInt8].self, at: 0) == bet.requestHash else {
            throw WalletError(.conflictingReplay, "bet id \(bet.betIDText) was already used for a different bet")
        }
        let bytes = try row.decode([UInt8].self, at: 1)
        return try bytes.withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) }
    }
}
