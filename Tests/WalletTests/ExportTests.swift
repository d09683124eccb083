import Foundation
import RaveCrypto
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Wallet

@Suite("Wallet export")
struct WalletExportTests {
    private func export(_ fixture: WalletFixture, _ user: RaveID) async throws -> ExportChecks.Export {
        let participant = WalletExportParticipant(dependencies: fixture.dependencies)
        return try await ExportChecks.export(ExportV1.ExportUserRequest(exportId: "export-1", userId: user.hex)) {
            try await participant.exportUser($0, context: WalletFixture.serviceContext())
        }
    }

    /// The user's and a merged id's accounts, every ledger row of those accounts, bets and seeds, in the documented
    /// shapes; a revealed seed's bytes (which hash to its seed_hash) but never the active seed's; nothing of another
    /// player.
    @Test func exportHoldsTheUsersMoneyAndNeverAnUnrevealedSeed() async throws {
        try await WalletFixture.with { fixture in
            let (user, merged, other) = (RaveID.random(), RaveID.random(), RaveID.random())
            for player in [user, merged, other] { try await fixture.deposit("100.00", to: player) }
            for _ in 0..<3 {
                _ = try await fixture.service.placeBet(
                    .init(bet: WalletFixture.bet("1.00")), context: WalletFixture.playerContext(user))
            }
            _ = try await fixture.service.rotateServerSeed(.init(), context: WalletFixture.playerContext(user))
            _ = try await fixture.service.placeBet(
                .init(bet: WalletFixture.bet("1.00")), context: WalletFixture.playerContext(user))
            _ = try await fixture.service.placeBet(
                .init(bet: WalletFixture.bet("2.00")), context: WalletFixture.playerContext(other))
            _ = try await fixture.merge.mergeUsers(
                .init(mergeId: "merge-export", sourceUserId: merged.hex, targetUserId: user.hex),
                context: WalletFixture.serviceContext())

            let export = try await export(fixture, user)
            #expect(export.order == ["accounts", "ledger", "bets", "server_seeds", "merges"])
            let accounts = export.records("accounts")
            #expect(Set(accounts.compactMap { $0["user_id"] as? String }) == [user.hex, merged.hex])
            #expect(accounts.allSatisfy { $0["currency_decimals"] as? Int == 2 && $0["balance"] is String })
            let expectedLedger = try await fixture.pool.query(
                """
                SELECT count(*) FROM transfers WHERE from_account IN (SELECT account_id FROM accounts WHERE user_id = ANY($1::uuid[]))
                    OR to_account IN (SELECT account_id FROM accounts WHERE user_id = ANY($1::uuid[]))
                """, [[user, merged]])[0].decode(Int.self, at: 0)
            let ledger = export.records("ledger")
            #expect(ledger.count == expectedLedger && ledger.count >= 2 + 3 + 1 + 1)
            #expect(Set(ledger.compactMap { $0["code"] as? String }).isSuperset(of: ["deposit", "bet_wager", "merge"]))
            #expect(ledger.allSatisfy { $0["amount"] is String && ExportChecks.isTime($0["created_at"]) })
            let bets = export.records("bets")
            #expect(bets.count == 4 && bets.allSatisfy { $0["user_id"] as? String == user.hex })
            #expect(bets.allSatisfy { $0["client_seed"] as? String == "seed" && $0["wager"] is String })
            let seeds = export.records("server_seeds")
            let revealed = seeds.filter { !($0["seed"] is NSNull) }
            let active = seeds.filter { $0["seed"] is NSNull }
            #expect(active.count == 1 && revealed.count >= 1)
            for seed in revealed {
                let encoded = try #require(seed["seed"] as? String)
                let bytes = try #require(Data(base64Encoded: encoded))
                let hash = Hex.encode(Digest.sha256([UInt8](bytes)))
                #expect(seed["seed_hash"] as? String == hash)
            }
            let activeSeed = try await fixture.pool.query(
                "SELECT seed FROM server_seeds WHERE user_id = $1 AND revealed_at IS NULL", [user])[0].decode(
                    [UInt8].self, at: 0)
            let text = export.raw.values.joined().map { String(decoding: $0, as: UTF8.self) }.joined()
            #expect(!text.contains(Data(activeSeed).base64EncodedString()))
            #expect(!text.contains(other.hex))
            #expect(export.records("merges").map { $0["merge_id"] as? String } == ["merge-export"])
        }
    }

    /// A ledger longer than a page comes whole over several pages, each row once; bad cursors and ids are
    /// INVALID_ARGUMENT; only identity may ask.
    @Test func exportPagesTheLedgerAndRefusesBadRequests() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("100.00", to: user)
            _ = try await fixture.pool.query(
                """
                INSERT INTO transfers (code, from_account, to_account, amount, user_id)
                SELECT 'adjustment', t.from_account, t.to_account, 1, $1 FROM transfers t, generate_series(1, 2100)
                WHERE t.user_id = $1
                """, [user])
            let export = try await export(fixture, user)
            let ids = export.records("ledger").compactMap { $0["transfer_id"] as? String }
            #expect(ids.count == 2101 && Set(ids).count == 2101)
            #expect(export.pages == 3 && export.pageSizes.allSatisfy { $0 <= 1000 })

            let participant = WalletExportParticipant(dependencies: fixture.dependencies)
            try await ExportChecks.serving(participant, as: "wallet", group: WalletFixture.group) { identity, gateway in
                let good = ExportV1.ExportUserRequest(exportId: "e", userId: user.hex)
                let first = try await identity.exportUser(good)
                #expect(!first.sections.isEmpty)
                for request in [
                    ExportV1.ExportUserRequest(exportId: "e", userId: user.hex, cursor: "1.ledger.eA=="),
                    ExportV1.ExportUserRequest(exportId: "e", userId: user.hex, cursor: "nonsense"),
                    ExportV1.ExportUserRequest(exportId: "e", userId: "bad"),
                ] {
                    let code = await ErasureChecks.status { _ = try await identity.exportUser(request) }
                    #expect(code == .invalidArgument)
                }
                let refused = await ErasureChecks.status { _ = try await gateway.exportUser(good) }
                #expect(refused == .permissionDenied)
            }
        }
    }
}
