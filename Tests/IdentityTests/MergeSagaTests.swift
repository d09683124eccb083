import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Identity

@Suite("Account merge saga")
struct MergeSagaTests {
    typealias Harness = IdentityHarness

    /// The seed's story: Bob plays as a guest on device A and logs in with Facebook there, plays as a guest on
    /// device B and logs in with Google there, then connects Facebook on device B: the accounts become one.
    @Test func seedStoryMergesTheSecondDevicesAccountIntoTheFirst() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            let guestA = try await harness.guestLogin(appID: app.appId, deviceID: "device-a")
            let facebookA = try await harness.providerLogin(
                appID: app.appId, deviceID: "device-a", provider: .facebook,
                token: try providers.token(.facebook, subject: "bob-fb"), caller: guestA)
            #expect(facebookA.userID == guestA.userID)
            let guestB = try await harness.guestLogin(appID: app.appId, deviceID: "device-b")
            let googleB = try await harness.providerLogin(
                appID: app.appId, deviceID: "device-b", provider: .google,
                token: try providers.token(.google, subject: "bob-google"), caller: guestB)
            #expect(googleB.userID == guestB.userID)
            #expect(googleB.userID != facebookA.userID)

            let deviceB = Harness.playerContext(googleB, appID: app.appId)
            let response = try await harness.player.connectProvider(
                .init(provider: .facebook, idToken: try providers.token(.facebook, subject: "bob-fb")),
                context: deviceB)
            guard case .merged(let merge) = response.outcome else {
                Issue.record("expected a merge, got \(String(describing: response.outcome))")
                return
            }
            #expect(merge.sourceUserId == googleB.userID)
            #expect(merge.targetUserId == facebookA.userID)

            let target = facebookA.userID
            let resolved = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [guestA.userID, guestB.userID]), context: Harness.serviceContext)
            #expect(resolved.users.map(\.canonicalId) == [target, target])
            let deviceA = Harness.playerContext(facebookA, appID: app.appId)
            let merged = try await harness.player.getMergedIdentities(.init(), context: deviceA)
            #expect(merged.userIds == [googleB.userID])
            // Both devices' sessions act as the target, and both devices play as it.
            let fromB = try await harness.player.getCurrentUser(.init(), context: deviceB)
            #expect(fromB.user?.profile?.userId == target)
            #expect(fromB.user?.providers == [.facebook, .google])
            let sessions = try await harness.player.listSessions(.init(), context: deviceA)
            #expect(Set(sessions.sessions.map(\.deviceId)) == ["device-a", "device-b"])
            let refreshed = try await harness.player.refreshSession(
                .init(refreshToken: googleB.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
            #expect(try accessTokenSubject(refreshed.tokens?.accessToken ?? "") == target)
            #expect(try await harness.guestLogin(appID: app.appId, deviceID: "device-b").userID == target)
            // Google now logs in to the merged account too.
            let google = try await harness.providerLogin(
                appID: app.appId, deviceID: "device-c", provider: .google,
                token: try providers.token(.google, subject: "bob-google"))
            #expect(google.userID == target)
        }
    }

    @Test func mergingAnAlreadyMergedSourceIsANoOp() async throws {
        try await Harness.withProviders { harness, _ in
            let app = try await harness.makeApplication()
            let source = try parseRaveID(try await harness.guestLogin(appID: app.appId, deviceID: "d1").userID)
            let target = try parseRaveID(try await harness.guestLogin(appID: app.appId, deviceID: "d2").userID)
            let other = try parseRaveID(try await harness.guestLogin(appID: app.appId, deviceID: "d3").userID)
            let saga = harness.dependencies.mergeSaga
            let first = try await harness.pool.transaction {
                try await saga.merge(source: source, into: target, appID: nil, in: $0)
            }
            #expect(first.performed)
            let again = try await harness.pool.transaction {
                try await saga.merge(source: source, into: other, appID: nil, in: $0)
            }
            #expect(!again.performed)
            #expect(again.mergeID == first.mergeID)
            #expect(again.target == target)
            let status = try await harness.admin.getMergeStatus(
                .init(mergeId: first.mergeID.hex), context: Harness.adminContext)
            #expect(status.merge?.state == .completed)
            #expect(status.merge?.sourceUserId == source.hex)
        }
    }

    /// A merge puts the merged-away user on the revocation feed, in commit order with ended sessions, so every
    /// gateway forgets its cached resolution of the user at its next poll.
    @Test func aMergePutsTheSourceOnTheRevocationFeed() async throws {
        try await Harness.withProviders { harness, _ in
            let app = try await harness.makeApplication()
            let sourceLogin = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let source = try parseRaveID(sourceLogin.userID)
            let target = try parseRaveID(try await harness.guestLogin(appID: app.appId, deviceID: "d2").userID)
            func feed(after cursor: UInt64) async throws -> IdentityV1.ListRevocationsResponse {
                try await harness.internalHandlers.listRevocations(
                    .init(afterCursor: cursor), context: Harness.serviceContext)
            }
            let before = try await feed(after: 0)
            let saga = harness.dependencies.mergeSaga
            _ = try await harness.pool.transaction {
                try await saga.merge(source: source, into: target, appID: nil, in: $0)
            }
            let after = try await feed(after: before.cursor)
            let merged = after.revocations.filter { !$0.mergedUserId.isEmpty }
            #expect(merged.map(\.mergedUserId) == [source.hex])
            #expect(merged.allSatisfy { $0.sessionId.isEmpty })
            #expect(after.cursor > before.cursor)
            // Read from the start, the notice is there too, once.
            #expect(try await feed(after: 0).revocations.filter { $0.mergedUserId == source.hex }.count == 1)
        }
    }

    @Test func bothUsersAppDataKeysBecomeCandidatesUntilOneIsSelected() async throws {
        try await Harness.withProviders { harness, _ in
            let app = try await harness.makeApplication()
            let sourceLogin = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let targetLogin = try await harness.guestLogin(appID: app.appId, deviceID: "d2")
            let source = try parseRaveID(sourceLogin.userID)
            let target = try parseRaveID(targetLogin.userID)
            let saga = harness.dependencies.mergeSaga
            _ = try await harness.pool.transaction {
                try await saga.merge(source: source, into: target, appID: nil, in: $0)
            }
            let context = Harness.playerContext(sourceLogin, appID: app.appId)
            let keys = try await harness.player.getAppDataKeys(.init(), context: context)
            #expect(keys.selectedKey.isEmpty)
            #expect(keys.candidates.sorted() == [source.hex, target.hex].sorted())
            for _ in 0..<2 {
                let selected = try await harness.player.selectAppDataKey(.init(key: source.hex), context: context)
                #expect(selected.selectedKey == source.hex)
            }
        }
    }

    /// The saga over real mTLS: a participant that fails its first two calls still ends up acknowledging, and the
    /// merge shows it pending until then.
    @Test func participantsAreRetriedUntilTheyAcknowledge() async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-merge-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "social"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let participant = FlakyParticipant(failures: 2)
        let server = RPCServer(
            services: [participant], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/social.pem",
                    privateKeyPath: "\(certificates)/social-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: Harness.group, logger: Logger(label: "participant", level: .warning))
        try server.start()
        let social = IdentityConfiguration.MergeParticipant(name: "social", host: "127.0.0.1", port: server.localPort)

        try await Harness.withProviders(participants: [social]) { harness, providers in
            let app = try await harness.makeApplication()
            let account = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .google, token: try providers.token(.google, subject: "g"))
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d2")
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d2", provider: .google, token: try providers.token(.google, subject: "g"),
                caller: guest)
            let context = Harness.playerContext(login, appID: app.appId)
            let pending = try await harness.player.getMergeStatus(.init(mergeId: login.mergeId), context: context)
            #expect(pending.merge?.state == .pending)
            #expect(pending.merge?.pendingParticipants == ["social"])

            let delivery = try harness.participantDelivery(to: [social], certificates: certificates)
            let running = Task { try await delivery.run() }
            var status = pending.merge
            let deadline = ContinuousClock.now + .seconds(20)
            while status?.state != .completed, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                status = try await harness.admin.getMergeStatus(
                    .init(mergeId: login.mergeId), context: Harness.adminContext
                ).merge
            }
            await delivery.shutdown()
            try await running.value

            #expect(status?.state == .completed)
            #expect(status?.acknowledgedBy == ["social"])
            #expect(status?.pendingParticipants == [])
            #expect(participant.calls == 3)
            #expect(
                participant.applied
                    == [
                        login.mergeId: MergeV1.MergeUsersRequest(
                            mergeId: login.mergeId, sourceUserId: guest.userID, targetUserId: account.userID)
                    ])
            #expect(participant.callersWereServices)
        }
        await server.shutdown()
    }
}

/// A merge participant that fails its first calls, then applies each merge once.
final class FlakyParticipant: MergeV1.MergeParticipantHandler {
    private struct State {
        var failuresLeft: Int
        var calls = 0
        var applied: [String: MergeV1.MergeUsersRequest] = [:]
        var callersWereServices = true
    }

    private let state: Mutex<State>

    init(failures: Int) {
        state = Mutex(State(failuresLeft: failures))
    }

    var calls: Int { state.withLock { $0.calls } }
    var applied: [String: MergeV1.MergeUsersRequest] { state.withLock { $0.applied } }
    var callersWereServices: Bool { state.withLock { $0.callersWereServices } }

    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        try state.withLock { state throws(RPCError) in
            state.calls += 1
            state.callersWereServices = state.callersWereServices && context.peer.role == .service("identity")
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw RPCError.unavailable("the participant is still starting")
            }
            let already = state.applied[request.mergeId] != nil
            state.applied[request.mergeId] = request
            return MergeV1.MergeUsersResponse(alreadyApplied: already)
        }
    }
}

/// A Rave ID from its wire text, failing the test when it is malformed.
func parseRaveID(_ text: String) throws -> RaveID {
    try #require(RaveID(text))
}

/// The `sub` claim of a compact JWT (its signature is the token tests' concern).
func accessTokenSubject(_ token: String) throws -> String? {
    let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
    let claims = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
    return claims?["sub"] as? String
}
