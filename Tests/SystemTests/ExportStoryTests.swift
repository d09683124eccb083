import Foundation
import RaveCrypto
import RaveMessages
import RaveRPC
import RaveTestSupport
import Testing

/// The account-export story, through the gateway and the real executables (docs/identity.md, "Exporting an
/// account").
///
/// A player with two devices merged into one account, a score, a friend, a gift both ways, a push token and money
/// asks for their data. The archive they download holds what every service keeps about them, under both ids, and
/// nothing of the other player's own.
@Suite("System: a player exports everything every service holds", .timeLimit(.minutes(4)))
struct ExportStoryTests {
    @Test func theArchiveHoldsEveryServicesRecordsOfBothIdsAndMatchesItsDigest() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
            let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
            _ = try await walletAdmin.createCurrency(.init(code: "GOLD", decimals: 2))
            let bob = try await stack.signUp(appID: appID, name: "Bob")
            let run = UUID().hex.prefix(8)

            // Alice: a guest on her iPad with Facebook, and one on her phone with Google that connects Facebook later.
            let facebook = try stack.providers.token(.facebook, subject: "alice-facebook-\(run)")
            let iPad = try await stack.providerLogin(
                try await stack.guest(appID: appID, deviceID: "alice-ipad-\(run)"), appID: appID,
                provider: .facebook, token: facebook)
            let phone = try await stack.providerLogin(
                try await stack.guest(appID: appID, deviceID: "alice-phone-\(run)"), appID: appID, provider: .google,
                token: try stack.providers.token(.google, subject: "alice-google-\(run)"))
            let alice = iPad.userID
            let mergedAway = phone.userID

            _ = try await phone.leaderboards.submitScore(.init(leaderboardKey: "high", score: 700))
            _ = try await bob.leaderboards.submitScore(.init(leaderboardKey: "high", score: 600))
            _ = try await iPad.social.sendFriendRequest(
                .init(listKey: "friends", target: .init(key: .userId(bob.userID))))
            _ = try await bob.social.acceptFriendRequest(.init(listKey: "friends", userId: alice))
            let pushToken = "alice-push-\(run)"
            _ = try await iPad.push.registerToken(
                .init(
                    platform: .fcm, token: pushToken, consent: .init(push: true), country: "FR", language: "fr",
                    timeZone: "UTC"))
            if stack.hasGifts {
                _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                    .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
                _ = try await bob.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [mergedAway], idempotencyKey: UUID().hex))
                _ = try await iPad.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [bob.userID], idempotencyKey: UUID().hex))
            }
            _ = try await walletAdmin.deposit(
                .init(
                    transfer: .init(
                        operationId: UUID().hex, userId: mergedAway, currency: "GOLD", economy: .sandbox,
                        amount: "12.34", reason: "welcome")))

            let connected = try await phone.identity.connectProvider(.init(provider: .facebook, idToken: facebook))
            guard case .merged(let merge)? = connected.outcome else {
                Issue.record("expected a merge, got \(String(describing: connected.outcome))")
                return
            }
            let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
            try await eventually("every participant acknowledged the merge") {
                try await identityAdmin.getMergeStatus(.init(mergeId: merge.mergeId)).merge?.state == .completed
            }

            // A guest has no password: a login within the last minutes is the re-authentication.
            let requested = try await iPad.identity.requestAccountExport(.init())
            let exportID = try #require(requested.accountExport?.exportId)
            var ready: IdentityV1.AccountExport?
            try await eventually("the export is ready", timeout: .seconds(60)) {
                let current = try await iPad.identity.getAccountExport(.init(exportId: exportID)).accountExport
                #expect(current?.status != .failed, "\(current?.error ?? "")")
                ready = current?.status == .ready ? current : nil
                return ready != nil
            }
            let export = try #require(ready)

            // Downloaded in chunks through the gateway: the bytes match the size and digest the export states.
            var archive: [UInt8] = []
            while true {
                let chunk = try await iPad.identity.downloadAccountExport(
                    .init(exportId: exportID, offset: Int64(archive.count)))
                #expect(chunk.sha256 == export.sha256)
                if chunk.chunk.isEmpty { break }
                archive += chunk.chunk
            }
            #expect(Int64(archive.count) == export.sizeBytes)
            #expect(Digest.sha256(archive).map { String(format: "%02x", $0) }.joined() == export.sha256)

            let root = try #require(try JSONSerialization.jsonObject(with: Data(archive)) as? [String: Any])
            #expect(root["format"] as? String == "rave.export.v1")
            #expect(root["user_id"] as? String == alice)
            #expect((root["merged_user_ids"] as? [String])?.contains(mergedAway) == true)
            let services = try #require(root["services"] as? [String: [String: [[String: Any]]]])
            var expected = ["identity", "social", "leaderboards", "push", "wallet"]
            if stack.hasGifts { expected.append("gifts") }
            #expect(Set(services.keys).isSuperset(of: expected), "\(services.keys.sorted())")

            func records(_ service: String, _ section: String) -> [[String: Any]] {
                services[service]?[section] ?? []
            }
            #expect(records("leaderboards", "scores").contains { $0["score"] as? String == "700" })
            #expect(records("social", "friends").contains { $0["peer_id"] as? String == bob.userID })
            #expect(records("push", "device_tokens").contains { $0["token"] as? String == pushToken })
            #expect(!records("wallet", "ledger").isEmpty, "the deposit to the merged-away id is Alice's now")
            if stack.hasGifts {
                #expect(records("gifts", "gifts_sent").contains { $0["recipient_id"] as? String == bob.userID })
                #expect(records("gifts", "gifts_received").contains { $0["sender_id"] as? String == bob.userID })
            }
            // Bob's own score is his alone.
            #expect(!records("leaderboards", "scores").contains { $0["user_id"] as? String == bob.userID })

            // Bob cannot see or download it.
            let foreign = await ErasureChecks.status {
                _ = try await bob.identity.downloadAccountExport(.init(exportId: exportID, offset: 0))
            }
            #expect(foreign == .notFound, "\(String(describing: foreign))")
        }
    }
}
