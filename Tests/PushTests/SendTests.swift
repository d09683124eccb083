import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Push

@Suite("Sending notifications")
struct SendTests {
    @Test func oneDeliveryPerDeviceAndConsentIsHonoured() async throws {
        try await PushFixture.with(now: utc(2026, 1, 1, 12)) { fixture in
            let user = RaveID.random()
            let muted = RaveID.random()
            try await fixture.register(user, token: "phone")
            try await fixture.register(user, token: "tablet", platform: .apns)
            try await fixture.register(muted, token: "muted", consent: PushV1.Consent())
            let id = RaveID.random()
            let sent = try await fixture.send([user, muted, .random()], id: id)
            #expect(sent.queued == 2 && sent.held == 0 && sent.skipped == 1)
            let deliveries = try await fixture.deliveries(id.hex)
            #expect(deliveries.count == 3)
            #expect(deliveries.filter { $0.state == .pending }.map(\.token).sorted() == ["phone", "tablet"])
            #expect(deliveries.first { $0.token == "muted" }?.state == .skipped)
        }
    }

    @Test func nightAdvertisingIsHeldOrDroppedPerDeviceZone() async throws {
        // 12:00 UTC: night in Kiritimati (02:00) and Pago Pago (01:00), day in London.
        try await PushFixture.with(now: utc(2026, 1, 1, 12)) { fixture in
            let noNight = PushV1.Consent(push: true, advertising: true, nightAdvertising: false)
            let east = RaveID.random()
            let west = RaveID.random()
            let day = RaveID.random()
            try await fixture.register(east, token: "east", timeZone: "Pacific/Kiritimati", consent: noNight)
            try await fixture.register(west, token: "west", timeZone: "Pacific/Pago_Pago", consent: noNight)
            try await fixture.register(day, token: "day", timeZone: "Europe/London", consent: noNight)
            let held = try await fixture.send([east, west, day], category: .advertising)
            #expect(held.queued == 1 && held.held == 2 && held.skipped == 0)
            let rows = try await fixture.pool.query(
                "SELECT token, next_attempt_at FROM deliveries WHERE state = 2 ORDER BY token")
            #expect(try rows.map { try $0.decode(String.self, at: 0) } == ["east", "west"])
            #expect(try rows[0].decode(Date.self, at: 1) == utc(2026, 1, 1, 18))
            #expect(try rows[1].decode(Date.self, at: 1) == utc(2026, 1, 1, 19))
            let dropped = try await fixture.send([east, west, day], category: .advertising, nightPolicy: .drop)
            #expect(dropped.queued == 1 && dropped.held == 0 && dropped.skipped == 2)
        }
    }

    @Test func replayReturnsTheOriginalResultAndADifferentRequestIsRefused() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.register(user, token: "phone")
            let id = RaveID.random()
            let first = try await fixture.send([user], id: id)
            let again = try await fixture.send([user], id: id)
            #expect(first == again)
            let count = try await fixture.pool.query("SELECT count(*) FROM deliveries")
            #expect(try count[0].decode(Int64.self, at: 0) == 1)
            await expectStatus(.alreadyExists) { try await fixture.send([user], title: "Other", id: id) }
        }
    }

    @Test func badSendRequestsAreInvalidArgument() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random().hex
            let context = PushFixture.adminContext()
            let good = PushV1.Notification(title: "t", body: "b")
            let requests = [
                PushV1.SendNotificationRequest(appId: "", userIds: [user], notification: good),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID.uppercased(), userIds: [user], notification: good),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID, userIds: [user.uppercased()], notification: good),
                PushV1.SendNotificationRequest(appId: PushFixture.appID, userIds: [], notification: good),
                PushV1.SendNotificationRequest(appId: PushFixture.appID, userIds: ["nope"], notification: good),
                PushV1.SendNotificationRequest(appId: PushFixture.appID, userIds: [user], notification: nil),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID, userIds: [user], notification: PushV1.Notification(title: "", body: "")),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID, userIds: [user],
                    notification: PushV1.Notification(title: "t", body: String(repeating: "é", count: 2100))),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID, userIds: [user],
                    notification: PushV1.Notification(title: "t", ttlSeconds: -1)),
                PushV1.SendNotificationRequest(
                    appId: PushFixture.appID, userIds: [user],
                    notification: PushV1.Notification(title: "t", category: .unrecognized(9))),
            ]
            for request in requests {
                await expectStatus(.invalidArgument) {
                    try await fixture.admin.sendNotification(request, context: context)
                }
            }
        }
    }

    /// The admin method checks the admin scope; who may call PushInternal is the RPC layer's rule (TrustModel).
    @Test func sendingNeedsAdminOrServiceCaller() async throws {
        try await PushFixture.with { fixture in
            let request = PushV1.SendNotificationRequest(
                appId: PushFixture.appID, userIds: [RaveID.random().hex], notification: PushV1.Notification(title: "t"))
            await expectStatus(.permissionDenied) {
                try await fixture.admin.sendNotification(request, context: PushFixture.playerContext(.random()))
            }
            let sent = try await fixture.internalService.sendNotification(
                request, context: PushFixture.serviceContext())
            #expect(sent.queued == 0)
        }
    }

    @Test func inboxListsUnreadFirstAndMarksRead() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let context = PushFixture.playerContext(user)
            var ids: [RaveID] = []
            for index in 0..<3 {
                let id = RaveID.random()
                ids.append(id)
                _ = try await fixture.send([user], title: "n\(index)", id: id)
                fixture.clock.advance(by: 60)
            }
            let marked = try await fixture.service.markRead(
                PushV1.MarkReadRequest(notificationIds: [ids[2].hex]), context: context)
            #expect(marked.marked == 1)
            let page = try await fixture.service.listInbox(PushV1.ListInboxRequest(pageSize: 2), context: context)
            #expect(page.entries.map(\.title) == ["n1", "n0"])
            #expect(page.unreadCount == 2)
            let rest = try await fixture.service.listInbox(
                PushV1.ListInboxRequest(pageSize: 2, offset: 2), context: context)
            #expect(rest.entries.map(\.title) == ["n2"] && rest.entries.first?.read == true)
            #expect(rest.entries.first?.data == [PushV1.DataEntry(key: "k", value: "v")])
            let all = try await fixture.service.markRead(PushV1.MarkReadRequest(), context: context)
            #expect(all.marked == 2)
            await expectStatus(.invalidArgument) {
                try await fixture.service.listInbox(PushV1.ListInboxRequest(pageSize: 500), context: context)
            }
        }
    }

    @Test func mergeMovesTokensAndInboxOnce() async throws {
        try await PushFixture.with { fixture in
            let source = RaveID.random()
            let target = RaveID.random()
            try await fixture.register(source, token: "old-phone")
            _ = try await fixture.send([source, target])
            let merge = PushMergeParticipant(dependencies: fixture.dependencies)
            let request = MergeV1.MergeUsersRequest(
                mergeId: "m1", sourceUserId: source.hex, targetUserId: target.hex)
            #expect(try await merge.mergeUsers(request, context: PushFixture.serviceContext()).alreadyApplied == false)
            #expect(try await merge.mergeUsers(request, context: PushFixture.serviceContext()).alreadyApplied == true)
            let tokens = try await fixture.service.getTokenInfo(
                PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(target)
            ).tokens
            #expect(tokens.map(\.token) == ["old-phone"])
            let inbox = try await fixture.service.listInbox(
                PushV1.ListInboxRequest(), context: PushFixture.playerContext(target))
            #expect(inbox.entries.count == 1)
        }
    }
}
