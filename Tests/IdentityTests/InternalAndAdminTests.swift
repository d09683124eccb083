import RaveMessages
import RaveRPC
import Testing

@testable import Identity
@testable import IdentityBenchmarks

@Suite struct InternalAndAdminTests {
    /// Who may call the internal methods is the RPC layer's decision (IdentityRuntimeTests, AccessPolicyTests);
    /// the admin methods still check the admin scope the gateway grants.
    @Test func adminMethodsNeedTheAdminScope() async throws {
        try await IdentityHarness.with { harness in
            let notAdmin = await statusCode {
                _ = try await harness.admin.createPublisher(.init(name: "x"), context: IdentityHarness.serviceContext)
            }
            #expect(notAdmin?.code == .unauthenticated || notAdmin?.code == .permissionDenied)
        }
    }

    @Test func resolveGetUsersAndUsedApplications() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let other = try await harness.makeApplication()
            let one = try await harness.guestLogin(appID: app.appId, deviceID: "1")
            let two = try await harness.guestLogin(appID: other.appId, deviceID: "2")
            let unknown = String(repeating: "a", count: 32)
            let resolved = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [one.userID, unknown]), context: IdentityHarness.serviceContext)
            #expect(resolved.users.map(\.canonicalId) == [one.userID, ""])
            let users = try await harness.internalHandlers.getUsers(
                .init(userIds: [two.userID, one.userID, unknown]), context: IdentityHarness.serviceContext)
            #expect(users.users.map(\.userId) == [two.userID, one.userID])
            let used = try await harness.internalHandlers.usedApplications(
                .init(appId: app.appId, userIds: [one.userID, two.userID]), context: IdentityHarness.serviceContext)
            #expect(used.userIds == [one.userID])
            let malformed = await statusCode {
                _ = try await harness.internalHandlers.resolveUsers(
                    .init(userIds: ["not-an-id"]), context: IdentityHarness.serviceContext)
            }
            #expect(malformed?.code == .invalidArgument)
            #expect(malformed?.message.contains("user_ids[0]") == true)
        }
    }

    @Test func applicationSettingsRoundTripAndUpdate() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication(
                settings: .init(
                    displayNameScope: .application, pictureScope: .global, allowForceDisconnect: true,
                    mergePolicy: .prompt, twoFactorAllowed: true, crossAppLogin: false))
            #expect(app.settings?.mergePolicy == .prompt)
            #expect(app.settings?.displayNameScope == .application)
            let updated = try await harness.admin.updateApplication(
                .init(appId: app.appId, name: .init(value: "Renamed"), settings: .init(mergePolicy: .automatic)),
                context: IdentityHarness.adminContext)
            #expect(updated.application?.name == "Renamed")
            #expect(updated.application?.settings?.mergePolicy == .automatic)
            #expect(updated.application?.settings?.allowForceDisconnect == false)
            let missing = await statusCode {
                _ = try await harness.admin.createApplication(
                    .init(publisherId: String(repeating: "b", count: 32), name: "x"),
                    context: IdentityHarness.adminContext)
            }
            #expect(missing?.code == .notFound)
        }
    }

    @Test func accountMethodsNeedASignedInPlayer() async throws {
        try await IdentityHarness.with { harness in
            let connect = await statusCode {
                _ = try await harness.player.connectProvider(.init(), context: IdentityHarness.anonymous)
            }
            #expect(connect?.code == .unauthenticated)
            let enable = await statusCode {
                _ = try await harness.player.enableTwoFactor(.init(), context: IdentityHarness.anonymous)
            }
            #expect(enable?.code == .unauthenticated)
            let status = await statusCode {
                _ = try await harness.admin.getMergeStatus(
                    .init(mergeId: String(repeating: "c", count: 32)), context: IdentityHarness.adminContext)
            }
            #expect(status?.code == .notFound)
        }
    }
}

@Suite("Identity benchmark")
struct IdentityBenchmarkTests {
    /// A short run keeps the benchmark working; `rave-bench identity` gives the numbers.
    @Test func benchmarkMeasuresEveryOperationWithoutErrors() async throws {
        try await IdentityHarness.with { harness in
            let parameters = IdentityBenchmark.Parameters(seconds: 0.3, concurrency: 4)
            let results = try await IdentityBenchmark(service: harness.dependencies, parameters: parameters).run()
            #expect(
                results.measurements.map(\.name) == [
                    "guest_login_new_device", "guest_login_new_device_cross_app", "refresh_session",
                    "resolve_users_100", "password_login", "guest_login_baseline", "refresh_session_baseline",
                    "guest_login_during_flood", "refresh_session_during_flood",
                ])
            #expect(results.measurements.allSatisfy { $0.calls > 0 && $0.errors == 0 })
            let flood = try #require(results.flood)
            #expect(flood.checked > 0 && flood.failed == 0)
            let json = IdentityBenchmark.json(results, parameters: parameters)
            #expect(json.contains("\"resolve_users_100\"") && json.contains("\"password_flood\""))
        }
    }
}
