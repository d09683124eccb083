import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTransport
import Synchronization
import Testing

@testable import Wallet

@Suite("Wallet crash", .timeLimit(.minutes(5)))
struct WalletCrashTests {
    /// A batch a client sent, and the results if the wallet acknowledged it.
    struct SentBatch: Sendable {
        var player: RaveID
        var bets: [WalletV1.Bet]
        var results: [WalletV1.BetResult]?
    }

    static let players = 6
    static let betsPerBatch = 10

    /// kill -9 the real `wallet` process while clients send batches over mTLS, restart it, and replay every bet id:
    /// every acknowledged bet is stored exactly once with the acknowledged result, every other one is absent or
    /// complete, and the ledger balances before and after the replay.
    @Test func killDuringBatchLoadLosesNoAcknowledgedBet() async throws {
        try await WalletNetworkHarness.withDatabase(prefix: "rave_wallet_crash_") { url in
            let certificates = try WalletNetworkHarness.certificates(services: ["wallet", "gateway"])
            defer { try? FileManager.default.removeItem(atPath: certificates) }
            let identity = try IdentityPeer(certificates: certificates)
            let environment = [
                "RAVE_CERT_DIR": certificates, "RAVE_DATABASE_URL": url, "RAVE_LOG_LEVEL": "warning",
                "RAVE_DB_POOL_SIZE": "8", "RAVE_EVENT_LOOPS": "2", "RAVE_WALLET_IDENTITY_ADDRESS": identity.address,
            ]
            let group = try EventLoopGroup(loopCount: 1)
            defer { group.shutdown() }
            let tls = try WalletNetworkHarness.clientTLS(certificates, name: "gateway")

            let first = try WalletProcess(environment: environment)
            let firstClient = RPCClient(host: "127.0.0.1", port: first.port, tls: tls, group: group)
            try await Self.waitUntilServing(firstClient, process: first)
            let admin = WalletV1.WalletAdminClient(caller: firstClient)
            try await WalletNetworkHarness.setUpCatalog(admin)
            let players = (0..<Self.players).map { _ in RaveID.random() }
            for player in players {
                try await WalletNetworkHarness.deposit("100.00", to: player, admin: admin, identity: identity.identity)
            }

            let sent = try await Self.loadUntilKilled(WalletV1.WalletClient(caller: firstClient), players, first)
            firstClient.close()
            first.stop()
            let acknowledged = sent.filter { $0.results != nil }
            #expect(acknowledged.count >= 10, "too few batches were acknowledged before the kill")
            #expect(sent.count > acknowledged.count, "no batch was in flight at the kill")

            let pool = try PostgresPool(configuration: .init(connectionString: url), group: WalletFixture.group)
            defer { pool.shutdown() }
            let ledger = WalletFixture(pool: pool, dependencies: WalletFixture.dependencies(pool: pool))
            try await Self.expectAcknowledgedStored(acknowledged, pool: pool)
            try await Self.expectEveryBetComplete(pool: pool)
            try await ledger.expectLedgerInvariants()

            let second = try WalletProcess(environment: environment)
            defer { second.stop() }
            let secondClient = RPCClient(host: "127.0.0.1", port: second.port, tls: tls, group: group)
            defer { secondClient.close() }
            try await Self.waitUntilServing(secondClient, process: second)
            let wallet = WalletV1.WalletClient(caller: secondClient)
            for batch in sent {
                let replay = try await wallet.placeBets(
                    .init(bets: batch.bets), options: WalletNetworkHarness.asPlayer(batch.player))
                if let results = batch.results {
                    #expect(replay.results == results, "an acknowledged batch answered differently after the restart")
                } else {
                    #expect(replay.results.allSatisfy { $0.status == .settled || $0.status == .failed })
                }
            }
            let distinct = Set(sent.flatMap { $0.bets.map(\.betId) }).count
            let stored = try await pool.query("SELECT count(*) FROM bets")
            #expect(try stored[0].decode(Int64.self, at: 0) == Int64(distinct))
            try await Self.expectAcknowledgedStored(acknowledged, pool: pool)
            try await Self.expectEveryBetComplete(pool: pool)
            try await ledger.expectLedgerInvariants()
            await identity.shutdown()
        }
    }

    /// Clients send batches back to back (every third batch holds a chain of two) until the process is killed
    /// after enough acknowledgements; returns every batch sent, with the results of those acknowledged.
    static func loadUntilKilled(
        _ wallet: WalletV1.WalletClient, _ players: [RaveID], _ process: WalletProcess
    ) async throws -> [SentBatch] {
        let acknowledged = AcknowledgedCount()
        let child = process.process
        let killer = Task {
            while acknowledged.value.load(ordering: .relaxed) < 20 { try await Task.sleep(for: .milliseconds(5)) }
            child.signal(SIGKILL)
        }
        let sent = await withTaskGroup(of: [SentBatch].self) { group in
            for player in players {
                group.addTask {
                    var batches: [SentBatch] = []
                    for index in 0..<1_000 {
                        var batch = SentBatch(player: player, bets: (0..<betsPerBatch).map { _ in randomBet() })
                        if index % 3 == 0 {
                            let chain = RaveID.random().hex
                            batch.bets[0].chainId = chain
                            batch.bets[1].chainId = chain
                        }
                        do {
                            var options = WalletNetworkHarness.asPlayer(player)
                            options.timeout = .seconds(5)
                            let response = try await wallet.placeBets(.init(bets: batch.bets), options: options)
                            batch.results = response.results
                            acknowledged.value.add(1, ordering: .relaxed)
                            batches.append(batch)
                        } catch {
                            // The process is gone: this batch may or may not have committed.
                            batches.append(batch)
                            return batches
                        }
                    }
                    return batches
                }
            }
            var all: [SentBatch] = []
            for await batches in group { all += batches }
            return all
        }
        try await killer.value
        try await process.process.wait(within: .seconds(30))
        return sent
    }

    /// Batches acknowledged so far, shared by the clients and the task that kills the process.
    final class AcknowledgedCount: Sendable {
        let value = Atomic<Int>(0)
    }

    static func randomBet() -> WalletV1.Bet {
        let cents = Int.random(in: 10...200)
        return WalletFixture.bet("\(cents / 100).\(String(format: "%02d", cents % 100))")
    }

    /// Every acknowledged bet is stored with exactly the result the client received.
    static func expectAcknowledgedStored(_ batches: [SentBatch], pool: PostgresPool) async throws {
        var expected: [RaveID: WalletV1.BetResult] = [:]
        for batch in batches {
            for result in batch.results ?? [] { expected[RaveID(result.betId) ?? RaveID(high: 0, low: 0)] = result }
        }
        let rows = try await pool.query(
            "SELECT bet_id, result FROM bets WHERE bet_id = ANY($1::uuid[])", [Array(expected.keys)])
        #expect(rows.count == expected.count, "acknowledged bets missing after the crash")
        for row in rows {
            let bytes = try row.decode([UInt8].self, at: 1)
            let stored = try bytes.withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) }
            #expect(stored == expected[try row.decode(RaveID.self, at: 0)])
        }
    }

    /// A settled backed bet has its wager transfer and, when it won, its payout transfer; a failed bet has none;
    /// no transfer points at a bet that is not stored.
    static func expectEveryBetComplete(pool: PostgresPool) async throws {
        let incomplete = try await pool.query(
            """
            SELECT count(*) FROM bets b
            WHERE (b.status = 'settled' AND (
                    (SELECT count(*) FROM transfers t WHERE t.bet_id = b.bet_id AND t.code = 'bet_wager'
                        AND t.amount = b.wager) <> 1
                    OR (SELECT count(*) FROM transfers t WHERE t.bet_id = b.bet_id AND t.code = 'bet_payout'
                        AND t.amount = b.payout) <> (CASE WHEN b.payout > 0 THEN 1 ELSE 0 END)))
                OR (b.status = 'failed' AND EXISTS (SELECT 1 FROM transfers t WHERE t.bet_id = b.bet_id))
            """)
        #expect(try incomplete[0].decode(Int64.self, at: 0) == 0)
        let orphans = try await pool.query(
            """
            SELECT count(*) FROM transfers t
            WHERE t.bet_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM bets b WHERE b.bet_id = t.bet_id)
            """)
        #expect(try orphans[0].decode(Int64.self, at: 0) == 0)
    }

    /// Polls ListGames until the process answers (it migrates first), failing with its log if it exits.
    static func waitUntilServing(_ client: RPCClient, process: WalletProcess) async throws {
        let wallet = WalletV1.WalletClient(caller: client)
        for _ in 0..<300 {
            guard process.process.isRunning else {
                Issue.record("wallet exited during start-up:\n\(process.log)")
                throw PostgresError(.client, "wallet exited")
            }
            var options = WalletNetworkHarness.asPlayer(RaveID.random())
            options.timeout = .seconds(2)
            if (try? await wallet.listGames(.init(), options: options)) != nil { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("wallet did not answer within 30 s:\n\(process.log)")
        throw PostgresError(.client, "wallet did not start")
    }
}
