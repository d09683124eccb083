import Foundation
import RaveMessages
import RaveRPC
import Testing

/// Story 1 of the end-to-end stories (docs/TESTING.md), the seed's merge story, through the gateway and the real identity, social, leaderboards,
/// push and wallet executables: two devices, two accounts, one Facebook identity; the accounts become one.
@Suite("System: the seed's merge story", .timeLimit(.minutes(3)))
struct MergeStoryTests {
    @Test func bobsTwoDevicesEndUpAsOneAccountAndMergingAgainChangesNothing() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
            let carol = try await stack.signUp(appID: appID, name: "Carol")
            let dave = try await stack.signUp(appID: appID, name: "Dave")
            let facebookToken = try stack.providers.token(.facebook, subject: "bob-facebook")

            // The iPad: a guest, then a Facebook login on the same device, which upgrades the guest (the gateway
            // passes the signed-in caller to login methods); scores 500 and adds Dave.
            let iPadGuest = try await stack.guest(appID: appID, deviceID: "bob-ipad")
            let iPad = try await stack.providerLogin(iPadGuest, appID: appID, provider: .facebook, token: facebookToken)
            #expect(iPad.userID == iPadGuest.userID)
            _ = try await iPad.leaderboards.submitScore(.init(leaderboardKey: "high", score: 500))
            _ = try await iPad.social.addContactsByUsername(.init(usernames: [try await Self.username(dave)]))

            // The phone: a guest, then Google; scores 700 and adds Carol.
            let phoneGuest = try await stack.guest(appID: appID, deviceID: "bob-phone")
            let phone = try await stack.providerLogin(
                phoneGuest, appID: appID, provider: .google,
                token: try stack.providers.token(.google, subject: "bob-google"))
            #expect(phone.userID == phoneGuest.userID && phone.userID != iPad.userID)
            _ = try await phone.leaderboards.submitScore(.init(leaderboardKey: "high", score: 700))
            _ = try await phone.social.addContactsByUsername(.init(usernames: [try await Self.username(carol)]))
            var giftID = ""
            if stack.hasGifts {
                _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                    .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
                let sent = try await carol.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [phone.userID], idempotencyKey: UUID().hex))
                giftID = sent.results.first?.id ?? ""
                #expect(sent.results.map(\.status) == [.sent])
            }

            // On the phone Bob connects Facebook: the phone's account merges into the iPad's.
            let connected = try await phone.identity.connectProvider(.init(provider: .facebook, idToken: facebookToken))
            guard case .merged(let merge)? = connected.outcome else {
                Issue.record("expected a merge, got \(String(describing: connected.outcome))")
                return
            }
            let target = iPad.userID
            let source = phone.userID
            #expect(merge.sourceUserId == source && merge.targetUserId == target)
            let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
            try await eventually("every participant acknowledged the merge") {
                try await identityAdmin.getMergeStatus(.init(mergeId: merge.mergeId)).merge?.state == .completed
            }

            let before = try await Self.snapshot(
                iPad: iPad, phone: phone, target: target, source: source, hasGifts: stack.hasGifts)
            #expect(before.phoneUser == target, "the phone's session acts as the target")
            #expect(before.iPadUser == target)
            #expect(before.providers == [.facebook, .google], "the iPad's next call sees the merged account")
            #expect(before.mergedIdentities == [source])
            #expect(before.sourceResolvesTo == target)
            #expect(before.scores == [Self.Entry(userID: target, score: 700)], "the leaderboard shows 700 once")
            #expect(before.myBest == 700)
            #expect(before.contacts == Set([carol.userID, dave.userID]), "contacts are united")
            if stack.hasGifts {
                #expect(before.gifts == [giftID], "the gift the phone received waits on the iPad")
            }

            // Running the merge again (Bob connects Facebook on the phone once more) changes nothing.
            let again = try await phone.identity.connectProvider(.init(provider: .facebook, idToken: facebookToken))
            if case .merged(let repeated)? = again.outcome {
                #expect(repeated.mergeId == merge.mergeId)
            }
            #expect(
                try await Self.snapshot(
                    iPad: iPad, phone: phone, target: target, source: source, hasGifts: stack.hasGifts) == before)
            let status = try await identityAdmin.getMergeStatus(.init(mergeId: merge.mergeId)).merge
            #expect(status?.state == .completed && status?.pendingParticipants.isEmpty == true)
            let acknowledged = Set(status?.acknowledgedBy ?? [])
            #expect(acknowledged.isSuperset(of: ["social", "leaderboards", "push", "wallet"]))
        }
    }

    struct Entry: Hashable {
        var userID: String
        var score: Int64
    }

    /// Everything the story checks after the merge, as the two devices see it.
    struct Snapshot: Equatable {
        var phoneUser: String
        var iPadUser: String
        var providers: [IdentityV1.Provider]
        var mergedIdentities: [String]
        var sourceResolvesTo: String
        var scores: [Entry]
        var myBest: Int64
        var contacts: Set<String>
        var gifts: [String]
    }

    static func snapshot(
        iPad: PlayerSession, phone: PlayerSession, target: String, source: String, hasGifts: Bool
    ) async throws -> Snapshot {
        // The gateway caches merge resolutions briefly (RAVE_GATEWAY_MERGE_CACHE_TTL, 1 s here): wait it out.
        try await eventually("the phone's old token acts as the target") {
            try await phone.identity.getCurrentUser(.init()).user?.profile?.userId == target
        }
        let iPadUser = try await iPad.identity.getCurrentUser(.init()).user
        let scores = try await iPad.leaderboards.getGlobalScores(.init(leaderboardKey: "high", page: 1, pageSize: 50))
        let best = try await iPad.leaderboards.getMyGlobalScores(.init(leaderboardKey: "high", pageSize: 1))
        let contacts = try await iPad.social.queryContacts(.init(filter: .all, limit: 100))
        let gifts = hasGifts ? try await iPad.gifts.listGifts(.init()).gifts.map(\.giftId) : []
        return Snapshot(
            phoneUser: try await phone.identity.getCurrentUser(.init()).user?.profile?.userId ?? "",
            iPadUser: iPadUser?.profile?.userId ?? "", providers: iPadUser?.providers ?? [],
            mergedIdentities: try await iPad.identity.getMergedIdentities(.init()).userIds,
            sourceResolvesTo: try await iPad.identity.findUser(.init(key: .userId(source))).user?.userId ?? "",
            scores: scores.scores.map { Entry(userID: $0.userId, score: $0.score) },
            myBest: best.scores.first { $0.userId == target }?.score ?? 0,
            contacts: Set(contacts.contacts.map(\.userId)), gifts: gifts)
    }

    static func username(_ player: PlayerSession) async throws -> String {
        try await player.identity.getCurrentUser(.init()).user?.profile?.username ?? ""
    }
}
