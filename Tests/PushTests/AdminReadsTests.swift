import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Push

@Suite("Push operator reads")
struct AdminReadsTests {
    @Test func listUserDevicesShowsThePlayersDevicesWithMaskedTokens() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let phone = try #require(
                try await fixture.register(user, token: "apns-token-0123456789abcdef", platform: .apns))
            try await fixture.register(user, token: "short-tok", platform: .fcm)
            try await fixture.register(RaveID.random(), token: "someone-elses-token-99")
            let listed = try await fixture.admin.listUserDevices(
                PushV1.ListUserDevicesRequest(appId: PushFixture.appID, userId: user.hex),
                context: PushFixture.adminContext())
            #expect(Set(listed.devices.map(\.token)) == ["…abcdef", "…"])
            let masked = try #require(listed.devices.first { $0.platform == .apns })
            var expected = phone
            expected.token = "…abcdef"
            #expect(masked == expected)
            let none = try await fixture.admin.listUserDevices(
                PushV1.ListUserDevicesRequest(appId: PushFixture.appID, userId: RaveID.random().hex),
                context: PushFixture.adminContext())
            #expect(none.devices.isEmpty)
        }
    }

    @Test func listUserDevicesRefusesBadIdsInOurWordsAndPlayers() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            do {
                _ = try await fixture.admin.listUserDevices(
                    PushV1.ListUserDevicesRequest(appId: PushFixture.appID, userId: "nobody"),
                    context: PushFixture.adminContext())
                Issue.record("a malformed user_id was accepted")
            } catch {
                let status = RPCError(mapping: error, requestID: "test")
                #expect(status.code == .invalidArgument)
                #expect(status.message == "user_id must be 32 lowercase hex digits, got \"nobody\"")
            }
            await expectStatus(.invalidArgument) {
                try await fixture.admin.listUserDevices(
                    PushV1.ListUserDevicesRequest(appId: "", userId: user.hex), context: PushFixture.adminContext())
            }
            await expectStatus(.permissionDenied) {
                try await fixture.admin.listUserDevices(
                    PushV1.ListUserDevicesRequest(appId: PushFixture.appID, userId: user.hex),
                    context: PushFixture.playerContext(user))
            }
        }
    }

    @Test func maskedTokensKeepOnlyTheLastSixCharactersOfLongTokens() {
        #expect(AdminHandlers.maskedToken("0123456789ab") == "…6789ab")
        #expect(AdminHandlers.maskedToken("0123456789a") == "…")
        #expect(AdminHandlers.maskedToken("") == "…")
    }
}
