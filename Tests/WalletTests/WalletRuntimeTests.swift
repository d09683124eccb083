import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTransport
import Testing

@testable import Wallet

@Suite("Wallet over mTLS", .timeLimit(.minutes(2)))
struct WalletRuntimeTests {
    /// The wallet as `make run` starts it (runtime, migrations, services), driven over mTLS with the caller
    /// metadata the gateway sets: operator set-up, a backed bet, its replay, a batch, and the caller checks.
    @Test func betsThroughTheServiceRuntime() async throws {
        try await WalletNetworkHarness.withDatabase(prefix: "rave_wallet_runtime_") { url in
            let certificates = try WalletNetworkHarness.certificates(services: ["wallet", "gateway"])
            defer { try? FileManager.default.removeItem(atPath: certificates) }
            let identity = try IdentityPeer(certificates: certificates)
            let runtime = try await ServiceRuntime.start(
                name: "wallet",
                environment: [
                    "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                    "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "1s",
                    "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                    "RAVE_WALLET_IDENTITY_ADDRESS": identity.address,
                ], migrations: .directory(WalletMain.migrationsDirectory)
            ) { context in
                try WalletMain.services(context: context)
            }
            let running = Task { try await runtime.run() }
            let clientGroup = try EventLoopGroup(loopCount: 1)
            let connection = RPCClient(
                host: "127.0.0.1", port: runtime.rpcPort,
                tls: try WalletNetworkHarness.clientTLS(certificates, name: "gateway"), group: clientGroup)
            do {
                let admin = WalletV1.WalletAdminClient(caller: connection)
                let wallet = WalletV1.WalletClient(caller: connection)
                try await WalletNetworkHarness.setUpCatalog(admin)
                let player = RaveID.random()
                try await WalletNetworkHarness.deposit("10.00", to: player, admin: admin, identity: identity.identity)
                // Identity is asked over mTLS with the wallet's certificate: a user it does not know gets nothing.
                let stranger = await WalletNetworkHarness.status {
                    let transfer = WalletV1.OperatorTransfer(
                        operationId: RaveID.random().hex, userId: RaveID.random().hex, currency: "USD",
                        economy: .real, amount: "1.00")
                    _ = try await admin.deposit(.init(transfer: transfer), options: WalletNetworkHarness.asAdmin)
                }
                #expect(stranger == .notFound)

                let bet = WalletFixture.bet("1.00")
                let placed = try await wallet.placeBet(
                    .init(bet: bet), options: WalletNetworkHarness.asPlayer(player))
                let result = try #require(placed.result)
                #expect(result.status == .settled)
                let usd = Currency(code: "USD", decimals: 2)
                let expected = 1000 - 100 + (try MoneyFormat.parse(result.payout, currency: usd))
                #expect(result.balance == MoneyFormat.format(expected, currency: usd))
                let replayed = try await wallet.placeBet(
                    .init(bet: bet), options: WalletNetworkHarness.asPlayer(player))
                #expect(replayed.result == result)

                let batch = try await wallet.placeBets(
                    .init(bets: [WalletFixture.bet("0.50"), WalletFixture.bet("0.50")]),
                    options: WalletNetworkHarness.asPlayer(player))
                #expect(batch.results.map(\.status) == [.settled, .settled])

                let account = try await wallet.getWallet(.init(), options: WalletNetworkHarness.asPlayer(player))
                #expect(!account.balances.isEmpty)

                // A player token cannot reach operator methods, and no caller metadata means no player.
                let denied = await WalletNetworkHarness.status {
                    let transfer = WalletV1.OperatorTransfer(
                        operationId: "x", userId: player.hex, currency: "USD", economy: .real, amount: "1.00")
                    _ = try await admin.deposit(
                        .init(transfer: transfer), options: WalletNetworkHarness.asPlayer(player))
                }
                #expect(denied == .permissionDenied)
                let anonymous = await WalletNetworkHarness.status {
                    _ = try await wallet.placeBet(.init(bet: WalletFixture.bet("1.00")))
                }
                #expect(anonymous == .unauthenticated)
            } catch {
                Issue.record("call failed: \(error)")
            }
            connection.close()
            runtime.triggerShutdown()
            try await running.value
            clientGroup.shutdown()
            await identity.shutdown()
            let pool = try PostgresPool(configuration: .init(connectionString: url), group: WalletFixture.group)
            defer { pool.shutdown() }
            try await WalletFixture(pool: pool, dependencies: WalletFixture.dependencies(pool: pool))
                .expectLedgerInvariants()
        }
    }
}

@Suite struct WalletConfigurationTests {
    @Test func lanesDefaultToTwo() throws {
        #expect(try WalletConfiguration(environment: [:]).laneCount == 2)
    }

    @Test(arguments: ["abc", "0", "65", ""])
    func lanesOutOfRangeStopStartUpNamingTheVariable(value: String) {
        #expect {
            _ = try WalletConfiguration(environment: ["RAVE_WALLET_LANES": value])
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.kind == .invalidConfiguration && error.message.contains("RAVE_WALLET_LANES")
        }
    }
}
