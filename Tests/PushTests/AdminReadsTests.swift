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

@Suite("Push delivery reads")
struct DeliveryReadsTests {
    @Test func getDeliveriesNeverAnswersAWholeToken() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let tokens = ["apns-token-0123456789abcdef", "fcm-token-fedcba9876543210", "short-tok"]
            try await fixture.register(user, token: tokens[0], platform: .apns)
            try await fixture.register(user, token: tokens[1], platform: .fcm)
            try await fixture.register(user, token: tokens[2], platform: .fcm)
            let sent = try await fixture.send([user])
            let read = try await fixture.admin.getDeliveries(
                PushV1.GetDeliveriesRequest(notificationId: sent.notificationId), context: PushFixture.adminContext())
            #expect(Set(read.deliveries.map(\.token)) == ["…abcdef", "…543210", "…"])
            let answered = read.protobufBytes()
            for token in tokens {
                #expect(!answered.containsSubsequence(Array(token.utf8)), "GetDeliveries answered \(token) whole")
            }
            // The stored rows still hold them: delivery needs the whole token.
            #expect(Set(try await fixture.deliveries(sent.notificationId).map(\.token)) == Set(tokens))
        }
    }
}

extension [UInt8] {
    fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
