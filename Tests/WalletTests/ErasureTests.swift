import Foundation
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Wallet

/// EraseUser (docs/wallet.md, "Erasure"): the player's money rows stay, naming the tombstone instead of the player,
/// so the ledger still sums to zero; nothing else names the player or a merged id; a repeat changes nothing.
@Suite("Wallet: erasing a deleted account")
struct WalletErasureTests {
    /// Leftovers the wallet keeps by design: none may name an erased id.
    static func leftovers(_ ids: [RaveID], in pool: PostgresPool) async throws -> [Leftovers.Finding] {
        try await Leftovers.find(ids.map(\.hex), in: pool)
    }

    /// Every transfer's two sides sum to zero, and every account's transfers to its balance.
    static func ledgerSum(_ pool: PostgresPool) async throws -> Int64 {
        let rows = try await pool.query(
            """
            SELECT coalesce(sum(amount), 0)::bigint FROM (
                SELECT -amount FROM transfers UNION ALL SELECT amount FROM transfers) AS side (amount)
            """)
        return try rows[0].decode(Int64.self, at: 0)
    }

    @Test func erasureKeepsTheMoneyUnderTheTombstoneAndNamesNoErasedID() async throws {
        try await WalletFixture.with { fixture in
            let (player, guest, other) = (RaveID.random(), RaveID.random(), RaveID.random())
            let tombstone = RaveID.random()
            try await fixture.deposit("5.00", to: player)
            try await fixture.deposit("3.00", to: guest)
            try await fixture.deposit("2.00", to: player, game: "slot")
            try await fixture.deposit("7.00", to: other)
            _ = try await fixture.placeBet(WalletFixture.bet("1.00"), by: player)
            _ = try await fixture.placeBet(WalletFixture.bet("0.50"), by: guest)
            try await fixture.merge(guest, into: player)
            let before = try await fixture.balance(of: player)
            let otherBefore = try await fixture.balance(of: other)
            let seedsBefore = try await fixture.pool.query("SELECT count(*) FROM server_seeds")[0].decode(
                Int64.self, at: 0)

            let response = try await fixture.erasure.eraseUser(
                .init(erasureId: "erasure-1", userId: player.hex, tombstoneId: tombstone.hex),
                context: WalletFixture.serviceContext())
            #expect(!response.alreadyApplied)
            #expect(response.rowsAffected > 0)

            // The merged guest was found through the wallet's own merged_users record.
            #expect(try await Self.leftovers([player, guest], in: fixture.pool) == [])
            #expect(try await fixture.balance(of: tombstone) == before)
            #expect(try await fixture.balance(of: other) == otherBefore)
            #expect(try await Self.ledgerSum(fixture.pool) == 0)
            try await fixture.expectLedgerInvariants()
            let seeds = try await fixture.pool.query(
                "SELECT count(*), count(*) FILTER (WHERE revealed_at IS NULL) FROM server_seeds")
            #expect(try seeds[0].decode(Int64.self, at: 0) == seedsBefore, "seeds are kept (bets refer to them)")
            let active = try await fixture.pool.query(
                "SELECT count(*) FROM server_seeds WHERE user_id = $1 AND revealed_at IS NULL", [tombstone])
            #expect(try active[0].decode(Int64.self, at: 0) == 0, "the erased player's seed is revealed")
            let kept = try await fixture.pool.query(
                "SELECT count(*) FROM transfers WHERE user_id = $1", [tombstone])
            #expect(try kept[0].decode(Int64.self, at: 0) > 0)
            let erasures = try await fixture.pool.query("SELECT erasure_id FROM applied_erasures")
            #expect(try erasures.map { try $0.decode(String.self, at: 0) } == ["erasure-1"])

            // A repeat (the delivery retried after a lost answer) changes nothing.
            let repeated = try await fixture.erasure.eraseUser(
                .init(erasureId: "erasure-1", userId: player.hex, tombstoneId: RaveID.random().hex),
                context: WalletFixture.serviceContext())
            #expect(repeated.alreadyApplied)
            #expect(repeated.rowsAffected == 0)
            #expect(try await fixture.balance(of: tombstone) == before)
        }
    }

    /// Ids named in the request are erased even when the wallet never recorded their merge (its MergeUsers had not
    /// come yet): each gets a replacement of its own, so bet ids both players used do not collide.
    @Test func mergedIDsInTheRequestAreErasedWithoutAMergeRecord() async throws {
        try await WalletFixture.with { fixture in
            let (player, merged) = (RaveID.random(), RaveID.random())
            let tombstone = RaveID.random()
            try await fixture.deposit("4.00", to: player)
            try await fixture.deposit("4.00", to: merged)
            let shared = WalletFixture.bet("1.00")
            _ = try await fixture.placeBet(shared, by: player)
            _ = try await fixture.placeBet(shared, by: merged)

            _ = try await fixture.erasure.eraseUser(
                .init(
                    erasureId: "erasure-2", userId: player.hex, mergedUserIds: [merged.hex], tombstoneId: tombstone.hex),
                context: WalletFixture.serviceContext())
            #expect(try await Self.leftovers([player, merged], in: fixture.pool) == [])
            let owners = try await fixture.betRows(shared.betId)
            #expect(owners.count == 2 && owners.contains(tombstone))
            #expect(try await Self.ledgerSum(fixture.pool) == 0)
            try await fixture.expectLedgerInvariants()
        }
    }

    /// The rule every erasure participant shares (`UserErasure`): erasure ids of 1…128 bytes (bytes, not
    /// characters), ids in the wire form, a tombstone that is none of the erased ids.
    @Test func requestsAreChecked() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            /// Whether the erasure was applied before.
            func erase(
                _ id: String, user: String = user.hex, tombstone: String = RaveID.random().hex
            ) async throws -> Bool {
                try await fixture.erasure.eraseUser(
                    .init(erasureId: id, userId: user, tombstoneId: tombstone), context: WalletFixture.serviceContext()
                ).alreadyApplied
            }
            let tombstoneProblem = "tombstone_id must differ from user_id and every merged_user_ids entry"
            await expectStatus(.invalidArgument, tombstoneProblem) { try await erase("e", tombstone: user.hex) }
            await expectStatus(.invalidArgument, "erasure_id must be 1…128 bytes, got 0") { try await erase("") }
            await expectStatus(.invalidArgument, "erasure_id must be 1…128 bytes, got 129") {
                try await erase(String(repeating: "x", count: 129))
            }
            // 43 characters of 3 bytes each: within a limit of characters, over the limit of bytes.
            await expectStatus(.invalidArgument, "erasure_id must be 1…128 bytes, got 129") {
                try await erase(String(repeating: "€", count: 43))
            }
            await expectStatus(
                .invalidArgument, "user_id must be a Rave ID (32 lowercase hex digits), got 9 bytes"
            ) {
                try await erase("e", user: "NOT-AN-ID")
            }
            #expect(try await fixture.pool.query("SELECT 1 FROM applied_erasures").isEmpty)

            let longest = String(repeating: "x", count: 128)
            #expect(try await !erase(longest))
            #expect(try await erase(longest))
            let recorded = try await fixture.pool.query("SELECT erasure_id FROM applied_erasures")
            #expect(try recorded.map { try $0.decode(String.self, at: 0) } == [longest])
        }
    }

    /// Once the erasure has started, this process refuses every call naming the user (NOT_FOUND), whether the
    /// player calls or an operator names it.
    @Test func callsNamingTheErasedUserAreRefused() async throws {
        try await WalletFixture.with { fixture in
            let player = RaveID.random()
            try await fixture.deposit("1.00", to: player)
            _ = try await fixture.erasure.eraseUser(
                .init(erasureId: "erasure-refuse", userId: player.hex, tombstoneId: RaveID.random().hex),
                context: WalletFixture.serviceContext())
            await expectStatus(.notFound, "this account was deleted") {
                try await fixture.service.getWallet(
                    WalletV1.GetWalletRequest(), context: WalletFixture.playerContext(player))
            }
            await expectStatus(.notFound, "this account was deleted") {
                try await fixture.placeBet(WalletFixture.bet("0.10"), by: player)
            }
            await expectStatus(.notFound, "this account was deleted") { try await fixture.deposit("1.00", to: player) }
            #expect(try await Self.leftovers([player], in: fixture.pool) == [])
        }
    }

    /// Bets racing the erasure, tracked as the service's RPC wiring tracks them: the erasure waits for those that
    /// started before it, refuses the rest, and once it has answered no row names the player.
    @Test func betsRacingTheErasureLeaveNoRowNamingThePlayer() async throws {
        try await WalletFixture.with { fixture in
            let player = RaveID.random()
            let tombstone = RaveID.random()
            try await fixture.deposit("100.00", to: player)
            let (response, problems) = try await ErasureChecks.racing(
                { _ = try await fixture.placeBet(WalletFixture.bet("0.01"), by: player) },
                merges: fixture.dependencies.merges
            ) {
                try await fixture.erasure.eraseUser(
                    .init(erasureId: "erasure-race", userId: player.hex, tombstoneId: tombstone.hex),
                    context: WalletFixture.serviceContext())
            }
            #expect(problems.isEmpty)
            #expect(!response.alreadyApplied)
            #expect(try await Self.leftovers([player], in: fixture.pool) == [])
            #expect(try await fixture.balance(of: player) == 0)
            #expect(try await fixture.balance(of: tombstone) > 0)
            try await fixture.expectLedgerInvariants()
        }
    }

    /// Over mTLS as identity calls it: the erasure participant is served, and only identity may call it.
    @Test func identityCallsEraseUserOverMutualTLS() async throws {
        try await WalletFixture.with { fixture in
            let certificates = try WalletNetworkHarness.certificates(services: ["wallet", "social"])
            defer { try? FileManager.default.removeItem(atPath: certificates) }
            let server = RPCServer(
                services: fixture.dependencies.rpcServices, access: TrustModel.backend,
                tls: try TLSContext(
                    .server(
                        certificateChainPath: "\(certificates)/wallet.pem",
                        privateKeyPath: "\(certificates)/wallet-key.pem",
                        trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
                group: WalletFixture.group, logger: .init(label: "wallet", level: .critical))
            try server.start()
            func client(_ name: String) throws -> (RPCClient, ErasureV1.ErasureParticipantClient) {
                let connection = RPCClient(
                    host: "127.0.0.1", port: server.localPort,
                    tls: try WalletNetworkHarness.clientTLS(certificates, name: name), group: WalletFixture.group,
                    logger: .init(label: name, level: .critical))
                return (connection, ErasureV1.ErasureParticipantClient(caller: connection))
            }
            let player = RaveID.random()
            try await fixture.deposit("1.00", to: player)
            let request = ErasureV1.EraseUserRequest(
                erasureId: "erasure-tls", userId: player.hex, tombstoneId: RaveID.random().hex)
            let (socialConnection, social) = try client("social")
            await expectStatus(.permissionDenied) { try await social.eraseUser(request) }
            let (identityConnection, identity) = try client("identity")
            let response = try await identity.eraseUser(request)
            #expect(!response.alreadyApplied)
            #expect(try await Self.leftovers([player], in: fixture.pool) == [])
            socialConnection.close()
            identityConnection.close()
            await server.shutdown()
        }
    }
}

extension WalletFixture {
    var erasure: WalletErasureParticipant { WalletErasureParticipant(dependencies: dependencies) }
}
