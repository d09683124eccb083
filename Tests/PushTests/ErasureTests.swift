import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Push

@Suite("Push: erasing a deleted account")
struct PushErasureTests {
    @Test("the user's tokens, deliveries and inbox go; a notification to others too names the tombstone")
    func eraseUserLeavesNothingNamingTheUser() async throws {
        try await PushFixture.with { fixture in
            let (user, merged, bystander, namedOnly) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            try await fixture.register(user, token: "user-phone")
            try await fixture.register(merged, token: "merged-phone")
            try await fixture.register(bystander, token: "bystander-phone")
            try await fixture.mergePush(merged, into: user)
            // Queued and held deliveries, inbox entries, and a notification to the user and the bystander together.
            try await fixture.register(user, token: "user-tablet", timeZone: "Asia/Seoul")
            let shared = try await fixture.send([user, bystander])
            _ = try await fixture.send([user], category: .advertising)
            _ = try await fixture.send([bystander])
            // A token a call registered under the merged id after the merge, and one of an id only the request names.
            for (id, token) in [(merged, "late"), (namedOnly, "other")] {
                _ = try await fixture.pool.query(
                    """
                    INSERT INTO device_tokens (token_id, app_id, user_id, platform, token, sandbox, consent_push,
                        consent_advertising, consent_night_advertising, option_foreground, option_badge, option_sound,
                        country, language, time_zone, registered_at)
                    VALUES ($1, $2, $3, 1, $4, false, true, true, true, true, true, true, 'FR', 'fr', 'UTC', now())
                    """, [RaveID.random(), PushFixture.appID, id, token])
            }
            let ids = [user, merged, namedOnly]
            #expect(try await ErasureChecks.rowsNaming(ids, in: fixture.pool).count >= 4)

            let request = ErasureV1.EraseUserRequest(
                erasureId: "erasure-1", userId: user.hex, mergedUserIds: [merged.hex, namedOnly.hex],
                tombstoneId: RaveID.random().hex)
            try await ErasureChecks.serving(
                PushErasureParticipant(dependencies: fixture.dependencies), as: "push", group: PushFixture.group
            ) { identity, gateway in
                let first = try await identity.eraseUser(request)
                #expect(!first.alreadyApplied && first.rowsAffected >= 8)
                #expect(try await ErasureChecks.rowsNaming(ids, in: fixture.pool) == [:])
                let before = try await ErasureChecks.rowCounts(in: fixture.pool)
                let again = try await identity.eraseUser(request)
                #expect(again.alreadyApplied && again.rowsAffected == 0)
                #expect(try await ErasureChecks.rowCounts(in: fixture.pool) == before)
                let refused = await ErasureChecks.status { _ = try await gateway.eraseUser(request) }
                #expect(refused == .permissionDenied)
            }

            // The bystander keeps the device, the deliveries and both notifications.
            #expect(try await fixture.deliveries(shared.notificationId).map(\.token) == ["bystander-phone"])
            let inbox = try await fixture.service.listInbox(
                PushV1.ListInboxRequest(), context: PushFixture.playerContext(bystander))
            #expect(inbox.entries.count == 2)
            // A send naming the deleted user afterwards notifies only the others and stores no trace of it.
            let later = try await fixture.send([user, bystander])
            #expect(later.queued == 1)
            // An event published for the user before the deletion is consumed without a notification.
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: EventNotificationTests.quiet)
            let consumed = try await sink.deliverEvents(
                .init(events: [EventNotificationTests.giftReceived(to: user, from: "Alice")]),
                context: PushFixture.serviceContext())
            #expect(consumed.handled == 1)
            #expect(try await ErasureChecks.rowsNaming(ids, in: fixture.pool) == [:])
            let asDeleted = await ErasureChecks.status {
                _ = try await fixture.service.listInbox(
                    PushV1.ListInboxRequest(), context: PushFixture.playerContext(user))
            }
            #expect(asDeleted == .notFound)
        }
    }
}
