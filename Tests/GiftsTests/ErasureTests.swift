import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Gifts

@Suite("Erasing a deleted account")
struct ErasureTests {
    @Test("what the user received, asked for and shared goes; what others hold names the tombstone")
    func eraseUserLeavesNothingNamingTheUser() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let user = harness.identity.addUser(named: "Deleted")
            let merged = harness.identity.addUser()
            let bystander = harness.identity.addUser(named: "Bystander")
            let friend = harness.identity.addUser(named: "Friend")
            let player = harness.player
            _ = try await harness.send(from: friend, to: [user])
            let pendingFromUser = try await harness.send(from: user, to: [bystander]).results[0].id
            let claimedFromUser = try await harness.send(from: user, to: [friend]).results[0].id
            _ = try await player.acceptGift(.init(giftId: claimedFromUser), context: harness.context(friend))
            let bystanderGift = try await harness.send(from: bystander, to: [friend]).results[0].id
            // The bystander asked the user, who granted: the gift and the request stay the bystander's.
            let askedUser = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [user.hex]), context: harness.context(bystander)
            ).results[0].id
            _ = try await player.grantGiftRequest(.init(requestId: askedUser), context: harness.context(user))
            _ = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [user.hex]), context: harness.context(friend))
            let userAsked = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [friend.hex]), context: harness.context(user)
            ).results[0].id
            _ = try await player.grantGiftRequest(.init(requestId: userAsked), context: harness.context(friend))
            _ = try await player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .facebook, externalUserId: "fb-newcomer", requestId: "r-1")]),
                context: harness.context(user))
            // The friend's invitation reached the user when the user connected Facebook.
            _ = try await player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .facebook, externalUserId: "fb-user", requestId: "r-2")]),
                context: harness.context(friend))
            _ = try await harness.dependencies.providerLinkSink.deliverEvents(
                .init(events: [ShareTests.linkEvent(user: user, subject: "fb-user", app: harness.app)]),
                context: harness.serviceContext)
            _ = try await player.createInstallLink(
                .init(giftTypeKey: "life", requestId: "r-1", channel: "facebook"), context: harness.context(user))
            _ = try await harness.send(from: merged, to: [friend])
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-into-deleted", sourceUserId: merged.hex, targetUserId: user.hex),
                context: harness.serviceContext)
            // Rows a call left under the merged id after the merge, and under an id only the request names.
            let namedOnly = RaveID.random()
            _ = try await harness.pool.query(
                """
                INSERT INTO install_links (code, app_id, creator_id, gift_type_key, request_id, channel)
                SELECT 'late-' || left(u::text, 8), $2, u, 'life', '', '' FROM unnest($1::uuid[]) AS u
                """, [[merged, namedOnly], harness.app])
            let ids = [user, merged, namedOnly]
            #expect(try await ErasureChecks.rowsNaming(ids, in: harness.pool).count >= 8)

            let tombstone = RaveID.random()
            let request = ErasureV1.EraseUserRequest(
                erasureId: "erasure-1", userId: user.hex, mergedUserIds: [merged.hex, namedOnly.hex],
                tombstoneId: tombstone.hex)
            try await ErasureChecks.serving(
                GiftsErasureParticipant(dependencies: harness.dependencies), as: "gifts", group: TestDatabase.group
            ) { identity, gateway in
                let first = try await identity.eraseUser(request)
                #expect(!first.alreadyApplied && first.rowsAffected >= 15)
                #expect(try await ErasureChecks.rowsNaming(ids, in: harness.pool) == [:])
                let before = try await ErasureChecks.rowCounts(in: harness.pool)
                let again = try await identity.eraseUser(request)
                #expect(again.alreadyApplied && again.rowsAffected == 0)
                #expect(try await ErasureChecks.rowCounts(in: harness.pool) == before)
                let refused = await ErasureChecks.status { _ = try await gateway.eraseUser(request) }
                #expect(refused == .permissionDenied)
            }

            // What the user gave stays with its recipients, from the tombstone: a gift, and the one granting the
            // bystander's request.
            let pending = try await player.listGifts(.init(), context: harness.context(bystander)).gifts
            #expect(pending.count == 2 && pending.contains { $0.giftId == pendingFromUser })
            #expect(Set(pending.map(\.senderId)) == [tombstone.hex])
            let claimed = try await player.getGift(.init(giftId: claimedFromUser), context: harness.context(friend))
            #expect(claimed.gift?.senderId == tombstone.hex && claimed.gift?.state == .accepted)
            let granted = try await player.getGiftRequestById(
                .init(requestId: askedUser), context: harness.context(bystander))
            #expect(granted.request?.state == .granted)
            let own = try await player.getGift(.init(giftId: bystanderGift), context: harness.context(friend))
            #expect(own.gift?.senderId == bystander.hex)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM external_gifts WHERE sender_id = $1 AND state = 1", [friend]) == 1)
            // A provider link the user made before the deletion, delivered late, gives the deleted account nothing.
            _ = try await player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .facebook, externalUserId: "fb-late", requestId: "r-3")]),
                context: harness.context(friend))
            let late = try await harness.dependencies.providerLinkSink.deliverEvents(
                .init(events: [ShareTests.linkEvent(user: user, subject: "fb-late", app: harness.app)]),
                context: harness.serviceContext)
            #expect(late.handled == 0)
            #expect(try await ErasureChecks.rowsNaming(ids, in: harness.pool) == [:])
            // Identity's stand-in still knows the account: gifts does not.
            let toDeleted = try await harness.send(from: bystander, to: [user, friend])
            #expect(toDeleted.results.map(\.status) == [.unknownUser, .sent])
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE recipient_id = $1", [user]) == 0)
            let asDeleted = await ErasureChecks.status {
                _ = try await player.listGifts(.init(), context: harness.context(user))
            }
            #expect(asDeleted == .notFound)
        }
    }
}
