import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

@Suite struct InternalLookupTests {
    @Test func getApplicationsReturnsPublisherAndScopesInRequestOrder() async throws {
        try await IdentityHarness.with { harness in
            let scoped = try await harness.makeApplication(
                settings: .init(displayNameScope: .application, pictureScope: .application))
            let plain = try await harness.makeApplication()
            let unknown = String(repeating: "c", count: 32)
            let response = try await harness.internalHandlers.getApplications(
                .init(appIds: [plain.appId, unknown, scoped.appId]), context: IdentityHarness.serviceContext)
            #expect(response.applications.map(\.appId) == [plain.appId, scoped.appId])
            #expect(response.applications.map(\.publisherId) == [plain.publisherId, scoped.publisherId])
            #expect(response.applications.last?.settings?.displayNameScope == .application)
            #expect(response.applications.last?.settings?.pictureScope == .application)
            #expect(response.applications.first?.settings?.displayNameScope == .global)
            let malformed = await statusCode {
                _ = try await harness.internalHandlers.getApplications(
                    .init(appIds: ["nope"]), context: IdentityHarness.serviceContext)
            }
            #expect(malformed?.code == .invalidArgument)
            #expect(malformed?.message.contains("app_ids[0]") == true)
        }
    }

    @Test func findUsersMatchesIdsUsernamesAndLeavesOutUnknown() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let alice = try await harness.guestLogin(appID: app.appId, deviceID: "alice")
            let bob = try await harness.guestLogin(appID: app.appId, deviceID: "bob")
            let username = "lookup" + RaveID.random().hex.prefix(12)
            _ = try await harness.player.updateCurrentUser(
                .init(username: .init(value: username), displayName: .init(value: "Alice")),
                context: IdentityHarness.playerContext(alice, appID: app.appId))
            let references: [IdentityV1.UserReference] = [
                .init(key: .userId(bob.userID)), .init(key: .username("nobody" + RaveID.random().hex.prefix(12))),
                .init(key: .username(username.uppercased())), .init(key: .email("nobody@example.com")),
            ]
            let response = try await harness.internalHandlers.findUsers(
                .init(references: references, appId: app.appId), context: IdentityHarness.serviceContext)
            #expect(response.users.map(\.reference) == [references[0], references[2]])
            #expect(response.users.map { $0.user?.userId } == [bob.userID, alice.userID])
            #expect(response.users.last?.user?.displayName == "Alice")
        }
    }

    @Test func findUsersRejectsMalformedReferences() async throws {
        try await IdentityHarness.with { harness in
            let empty = await statusCode {
                _ = try await harness.internalHandlers.findUsers(
                    .init(references: [.init()]), context: IdentityHarness.serviceContext)
            }
            #expect(empty?.code == .invalidArgument)
            #expect(empty?.message.contains("references[0]") == true)
            let badID = await statusCode {
                _ = try await harness.internalHandlers.findUsers(
                    .init(references: [.init(key: .email("a@b.example")), .init(key: .userId("XYZ"))]),
                    context: IdentityHarness.serviceContext)
            }
            #expect(badID?.message.contains("references[1].user_id") == true)
            let tooMany = await statusCode {
                _ = try await harness.internalHandlers.findUsers(
                    .init(references: Array(repeating: .init(key: .username("x")), count: 101)),
                    context: IdentityHarness.serviceContext)
            }
            #expect(tooMany?.code == .invalidArgument)
        }
    }
}
