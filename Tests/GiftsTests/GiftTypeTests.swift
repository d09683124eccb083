import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Gift types")
struct GiftTypeTests {
    @Test("operators create, update, list and get gift types; keys are unique per application")
    func defineGiftTypes() async throws {
        try await GiftsHarness.with { harness in
            let life = try await harness.createType("life", dailyLimit: 3)
            #expect(life.expirySeconds == 14 * 24 * 3600 && life.dailyLimitPerSender == 3)
            try await harness.createType("coin", requestable: false, expirySeconds: 60)
            await #expect {
                try await harness.createType("life")
            } throws: { hasStatus($0, .alreadyExists) }
            let updated = try await harness.admin.updateGiftType(
                .init(appId: harness.app.hex, giftType: .init(key: "life", name: "Extra life", expirySeconds: 3600)),
                context: harness.adminContext)
            #expect(updated.giftType?.name == "Extra life" && updated.giftType?.requestable == false)
            let listed = try await harness.admin.listGiftTypes(
                .init(appId: harness.app.hex), context: harness.adminContext)
            #expect(listed.giftTypes.map(\.key) == ["coin", "life"])
            let fetched = try await harness.admin.getGiftType(
                .init(appId: harness.app.hex, key: "coin"), context: harness.adminContext)
            #expect(fetched.giftType?.expirySeconds == 60)
            let player = harness.identity.addUser()
            let seen = try await harness.player.listGiftTypes(.init(), context: harness.context(player))
            #expect(seen.giftTypes.count == 2)
            await #expect {
                _ = try await harness.admin.listGiftTypes(
                    .init(appId: harness.app.hex), context: harness.context(player))
            } throws: { hasStatus($0, .permissionDenied) }
            await #expect {
                try await harness.createType("bad key!")
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.admin.getGiftType(
                    .init(appId: harness.app.hex, key: "missing"), context: harness.adminContext)
            } throws: { hasStatus($0, .notFound) }
        }
    }
}
