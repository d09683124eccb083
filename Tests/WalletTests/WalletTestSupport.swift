import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Wallet

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway database with the wallet's migrations applied, plus the services and callers tests use.
struct WalletFixture {
    /// The loops every test's connections run on; tests stay independent through their own databases.
    static var group: EventLoopGroup { ScratchDatabase.group }

    let pool: PostgresPool
    let dependencies: WalletDependencies
    var service: PlayerHandlers { PlayerHandlers(dependencies: dependencies) }
    var admin: AdminHandlers { AdminHandlers(dependencies: dependencies) }
    var merge: WalletMergeParticipant { WalletMergeParticipant(dependencies: dependencies) }

    /// Runs `body` against a fresh migrated database with a USD currency (2 decimals), a sample slot "slot" and
    /// an odds game "dice"; drops the database afterwards.
    ///
    /// `migratedUpTo` stops after that migration version, so a test can write data in an older schema and then
    /// run the remaining migrations itself; `merged_users` is created whatever the version, since every handler
    /// resolves ids through it.
    static func with<Result>(
        migratedUpTo lastVersion: Int64? = nil, _ body: (WalletFixture) async throws -> Result
    ) async throws -> Result {
        try await ScratchDatabase.with(prefix: "rave_wallet_test_") { url in
            let pool = try ScratchDatabase.pool(url: url)
            defer { pool.shutdown() }
            let shipped = try Migrator(pool: pool, directory: WalletMain.migrationsDirectory).migrations
            _ = try await Migrator(
                pool: pool,
                migrations: shipped.filter { $0.version <= lastVersion ?? .max || $0.name == "merged_users" }
            )
            .migrate()
            let fixture = WalletFixture(pool: pool, dependencies: Self.dependencies(pool: pool))
            try await fixture.setUpCatalog()
            return try await body(fixture)
        }
    }

    /// The wallet's dependencies on `pool`, asking the shared stand-in identity whether users exist.
    static func dependencies(pool: PostgresPool) -> WalletDependencies {
        WalletDependencies(pool: pool, users: IdentityPeer.shared.directory)
    }

    /// The stand-in identity operator transfers ask; `deposit` makes its user known there first.
    var identity: StandInIdentity { IdentityPeer.shared.identity }

    /// The app every player context plays in, spelled as the protocol writes ids.
    static let appID = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"

    func setUpCatalog() async throws {
        let context = Self.adminContext()
        _ = try await admin.createCurrency(WalletV1.CreateCurrencyRequest(code: "USD", decimals: 2), context: context)
        _ = try await admin.createGame(
            WalletV1.CreateGameRequest(
                game: WalletV1.Game(gameId: "slot", name: "Sample slot", math: .slot(GameMathTests.sampleSlot()))),
            context: context)
        let dice = WalletV1.OddsDefinition(
            sides: 6, winningNumbers: 3, multiplierNumerator: 19, multiplierDenominator: 10)
        _ = try await admin.createGame(
            WalletV1.CreateGameRequest(game: WalletV1.Game(gameId: "dice", name: "Dice", math: .odds(dice))),
            context: context)
        _ = try await admin.setEligibility(
            WalletV1.SetEligibilityRequest(appId: Self.appID, realMoneyCountries: ["GB"]), context: context)
    }

    static func adminContext() -> RequestContext {
        context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
    }

    static func playerContext(_ user: RaveID, scopes: Set<String> = [PreparedBet.authenticatedScope]) -> RequestContext
    {
        context(caller: Caller(userID: user.hex, appID: appID, sessionID: "s", scopes: scopes))
    }

    static func serviceContext() -> RequestContext {
        var context = context(caller: nil)
        context.peer = PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "identity")
        return context
    }

    static func context(caller: Caller?) -> RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: nil), caller: caller,
            logger: Logger(label: "wallet-test"))
    }

    /// Deposits `amount` USD (real economy) to `user` under a fresh operation id, making the user known to
    /// identity first.
    @discardableResult
    func deposit(
        _ amount: String, to user: RaveID, economy: WalletV1.Economy = .real, game: String = ""
    ) async throws
        -> WalletV1.OperatorTransferResponse
    {
        identity.add(user)
        let transfer = WalletV1.OperatorTransfer(
            operationId: RaveID.random().hex, userId: user.hex, currency: "USD", economy: economy,
            amount: amount, gameId: game)
        return try await admin.deposit(WalletV1.DepositRequest(transfer: transfer), context: Self.adminContext())
    }

    static func bet(
        _ wager: String, game: String = "dice", id: RaveID = .random(), economy: WalletV1.Economy = .real
    ) -> WalletV1.Bet {
        WalletV1.Bet(
            gameId: game, betId: id.hex, wager: wager, currency: "USD", economy: economy, clientSeed: "seed",
            country: "GB")
    }

    /// The player balance in minor units of the main USD wallet.
    func balance(of user: RaveID, economy: Int32 = 1) async throws -> Int64 {
        let rows = try await pool.query(
            "SELECT balance FROM accounts WHERE user_id = $1 AND kind = 'user' AND economy = $2", [user, economy])
        return try rows.first?.decode(Int64.self, at: 0) ?? 0
    }

    /// Checks the ledger invariants over the one-row-per-transfer table: each player balance equals the signed
    /// sum of its transfers (-amount where it is from_account, +amount where it is to_account) and the balance its
    /// newest transfer reached, and no balance is negative. (The ledger as a whole sums to zero by construction:
    /// every row is one movement, taken from one account and given to another.)
    func expectLedgerInvariants() async throws {
        let mismatched = try await pool.query(
            """
            SELECT count(*) FROM accounts a
            LEFT JOIN (
                SELECT account_id, sum(amount) AS total FROM (
                    SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers
                ) AS side (account_id, amount) GROUP BY account_id
            ) s USING (account_id)
            WHERE a.balance IS NOT NULL AND a.balance <> coalesce(s.total, 0)
            """)
        #expect(try mismatched[0].decode(Int64.self, at: 0) == 0)
        let staleBalanceAfter = try await pool.query(
            """
            SELECT count(*) FROM accounts a
            CROSS JOIN LATERAL (
                SELECT CASE WHEN t.from_account = a.account_id THEN t.from_balance_after ELSE t.to_balance_after END
                    AS balance_after
                FROM transfers t WHERE t.from_account = a.account_id OR t.to_account = a.account_id
                ORDER BY t.transfer_id DESC LIMIT 1
            ) newest
            WHERE a.balance IS NOT NULL AND newest.balance_after IS DISTINCT FROM a.balance
            """)
        #expect(try staleBalanceAfter[0].decode(Int64.self, at: 0) == 0)
        let negative = try await pool.query("SELECT count(*) FROM accounts WHERE balance < 0")
        #expect(try negative[0].decode(Int64.self, at: 0) == 0)
    }
}

/// Expects `body` to fail with the status the RPC layer would answer (`code` nil: any status), as a caller sees it.
func expectStatus<T>(
    _ code: StatusCode?, _ message: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record(
            "expected status \(code.map { "\($0)" } ?? "an error"), got success", sourceLocation: sourceLocation)
    } catch {
        let status = RPCError(mapping: error, requestID: "test")
        if let code { #expect(status.code == code, "\(status)", sourceLocation: sourceLocation) }
        if let message { #expect(status.message == message, sourceLocation: sourceLocation) }
    }
}
