import Foundation
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Push

@Suite("Push: exporting an account")
struct ExportTests {
    private static func export(
        _ fixture: PushFixture, _ request: ExportV1.ExportUserRequest
    ) async throws -> ExportChecks.Export {
        let participant = PushExportParticipant(dependencies: fixture.dependencies)
        return try await ExportChecks.export(request) {
            try await participant.exportUser($0, context: PushFixture.serviceContext())
        }
    }

    @Test(
        "every device, delivery, inbox entry and merge of the user and its merged ids, in the documented shapes; nothing of another user's"
    )
    func exportHoldsEveryRowOfTheUserAndMergedIDsAndNoOtherUsers() async throws {
        try await PushFixture.with { fixture in
            let (user, merged, namedOnly, other, stranger) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            try await fixture.register(user, token: "user-phone")
            try await fixture.register(user, token: "user-tablet", platform: .apns, timeZone: "Asia/Seoul")
            try await fixture.register(merged, token: "merged-phone")
            try await fixture.register(other, token: "other-phone")
            let toMerged = try await fixture.send([merged], title: "Before the merge")
            _ = try await PushMergeParticipant(dependencies: fixture.dependencies).mergeUsers(
                MergeV1.MergeUsersRequest(mergeId: "merge-export", sourceUserId: merged.hex, targetUserId: user.hex),
                context: PushFixture.serviceContext())
            try await fixture.mergePush(stranger, into: other)
            let title = "Hi \"you\"\n\u{1}é😀"
            let shared = try await fixture.send([user, other], title: title)
            let advertising = try await fixture.send([user], category: .advertising)
            let secret = try await fixture.send([other], title: "Only for the other")
            let later = try await fixture.send([user], title: "Later")
            _ = try await fixture.service.markRead(
                PushV1.MarkReadRequest(notificationIds: [shared.notificationId]),
                context: PushFixture.playerContext(user))
            // Every delivery state, on the user's and the merged id's deliveries.
            _ = try await fixture.pool.query(
                """
                UPDATE deliveries d SET state = n.state, attempts = n.state, last_result = 'result ' || n.state
                FROM (SELECT notification_id, token_id, (row_number() OVER (ORDER BY notification_id, token_id) - 1) % 6 + 1 AS state
                      FROM deliveries WHERE user_id = ANY($1::uuid[])) n
                WHERE d.notification_id = n.notification_id AND d.token_id = n.token_id
                """, [[user, merged]])
            // A token a call registered under the merged id after the merge, and one of an id only the request names.
            for (id, token) in [(merged, "late"), (namedOnly, "named")] {
                _ = try await fixture.pool.query(
                    """
                    INSERT INTO device_tokens (token_id, app_id, user_id, platform, token, sandbox, consent_push,
                        consent_advertising, consent_night_advertising, option_foreground, option_badge, option_sound,
                        country, language, time_zone, registered_at)
                    VALUES ($1, $2, $3, 1, $4, true, false, true, false, true, false, true, 'FR', 'fr', 'UTC', now())
                    """, [RaveID.random(), PushFixture.appID, id, token])
            }

            let request = ExportV1.ExportUserRequest(
                exportId: "export-1", userId: user.hex, mergedUserIds: [namedOnly.hex])
            let before = try await ExportChecks.contents(of: fixture.pool)
            let export = try await Self.export(fixture, request)
            #expect(try await ExportChecks.contents(of: fixture.pool) == before)
            #expect(export.pages == 1)
            #expect(export.order == ["device_tokens", "deliveries", "inbox", "merges"])

            let tokens = export.records("device_tokens")
            let booleans = [
                "sandbox", "consent_push", "consent_advertising", "consent_night_advertising", "option_foreground",
                "option_badge", "option_sound",
            ]
            #expect(
                tokens.allSatisfy {
                    Set($0.keys)
                        == Set(
                            booleans + [
                                "token_id", "app_id", "user_id", "platform", "token", "country", "language",
                                "time_zone", "registered_at",
                            ]) && ExportChecks.isID($0["token_id"]) && $0["app_id"] as? String == PushFixture.appID
                        && ExportChecks.isTime($0["registered_at"])
                })
            #expect(tokens.allSatisfy { record in booleans.allSatisfy { record[$0] is Bool } })
            // The merge moved the merged id's phone to the user.
            #expect(
                Set(tokens.map { "\($0["token"]!) \($0["user_id"]!) \($0["platform"]!)" }) == [
                    "user-phone \(user.hex) fcm", "user-tablet \(user.hex) apns", "merged-phone \(user.hex) fcm",
                    "late \(merged.hex) apns", "named \(namedOnly.hex) apns",
                ])
            let tablet = tokens.first { $0["token"] as? String == "user-tablet" }
            #expect(tablet?["time_zone"] as? String == "Asia/Seoul" && tablet?["country"] as? String == "KR")
            #expect(tablet?["language"] as? String == "ko" && tablet?["consent_push"] as? Bool == true)
            let late = tokens.first { $0["token"] as? String == "late" }
            #expect(late?["sandbox"] as? Bool == true && late?["consent_push"] as? Bool == false)

            let deliveries = export.records("deliveries")
            #expect(
                deliveries.allSatisfy {
                    Set($0.keys) == [
                        "notification_id", "token_id", "user_id", "platform", "token", "sandbox", "state", "attempts",
                        "next_attempt_at", "last_result", "updated_at",
                    ] && $0["attempts"] is Int && $0["sandbox"] is Bool && ExportChecks.isTime($0["next_attempt_at"])
                        && ExportChecks.isTime($0["updated_at"])
                })
            // The merged id's delivery stays its own; later sends reach the phone the merge moved to the user.
            let phones = ["user-phone", "user-tablet", "merged-phone"]
            let expectedDeliveries = [shared, advertising, later].flatMap { sent in
                phones.map { "\(sent.notificationId) \($0) \(user.hex)" }
            }
            #expect(
                Set(deliveries.map { "\($0["notification_id"]!) \($0["token"]!) \($0["user_id"]!)" })
                    == Set(expectedDeliveries + ["\(toMerged.notificationId) merged-phone \(merged.hex)"]))
            let states = deliveries.map { "\($0["attempts"]!) \($0["state"]!) \($0["last_result"]!)" }
            #expect(
                Set(states) == [
                    "1 pending result 1", "2 held result 2", "3 delivered result 3", "4 failed result 4",
                    "5 expired result 5", "6 skipped result 6",
                ])
            let rawDeliveries = (export.raw["deliveries"] ?? []).map { String(decoding: $0, as: UTF8.self) }
            #expect(rawDeliveries.allSatisfy { $0.contains(#""sandbox":false"#) && $0.contains(#""attempts":"#) })

            let inbox = export.records("inbox")
            #expect(
                inbox.allSatisfy {
                    Set($0.keys) == [
                        "user_id", "notification_id", "app_id", "title", "body", "data", "category", "read",
                        "created_at",
                    ] && $0["user_id"] as? String == user.hex && $0["data"] as? [String: String] == ["k": "v"]
                        && $0["body"] as? String == "body" && ExportChecks.isTime($0["created_at"])
                })
            #expect(
                Set(
                    inbox.map {
                        "\($0["notification_id"]!) \($0["category"]!) \($0["read"] as? Bool == true) \($0["title"]!)"
                    }) == [
                        "\(toMerged.notificationId) normal false Before the merge",
                        "\(shared.notificationId) normal true \(title)",
                        "\(advertising.notificationId) advertising false Hello",
                        "\(later.notificationId) normal false Later",
                    ])
            let rawInbox = (export.raw["inbox"] ?? []).map { String(decoding: $0, as: UTF8.self) }
            #expect(rawInbox.allSatisfy { $0.contains(#""read":true"#) || $0.contains(#""read":false"#) })

            let merges = export.records("merges")
            #expect(merges.count == 1)
            #expect(Set(merges.first?.keys.map { $0 } ?? []) == ["merge_id", "source_id", "target_id"])
            #expect(merges.first?["merge_id"] as? String == "merge-export")
            #expect(
                merges.first?["source_id"] as? String == merged.hex && merges.first?["target_id"] as? String == user.hex
            )

            let text = export.raw.values.joined().map { String(decoding: $0, as: UTF8.self) }.joined()
            for absent in [other.hex, stranger.hex, "other-phone", "Only for the other", secret.notificationId] {
                #expect(!text.contains(absent), "\(absent)")
            }
        }
    }

    @Test("more rows than a page: the pages hold every row once, within the limits, also in tiny pages")
    func exportPagesConcatenateToEveryRowOnce() async throws {
        try await PushFixture.with { fixture in
            let (user, merged) = (RaveID.random(), RaveID.random())
            try await fixture.register(user, token: "user-phone")
            let sent = try await fixture.send([user])
            // 1,200 copies of the notification, each delivered to the phone and in the user's or merged id's inbox.
            _ = try await fixture.pool.query(
                """
                WITH copies AS (
                    INSERT INTO notifications (notification_id, app_id, request, queued, held, skipped, created_at, expires_at)
                    SELECT gen_random_uuid(), app_id, request, 1, 0, 0, created_at, expires_at
                    FROM notifications, generate_series(1, 1200) WHERE notification_id = $1
                    RETURNING notification_id),
                numbered AS (SELECT notification_id, row_number() OVER () AS n FROM copies),
                delivered AS (
                    INSERT INTO deliveries (notification_id, token_id, user_id, platform, token, sandbox, state,
                        next_attempt_at, updated_at)
                    SELECT c.notification_id, t.token_id, t.user_id, t.platform, t.token, t.sandbox, 3, now(), now()
                    FROM numbered c, device_tokens t)
                INSERT INTO inbox_entries (user_id, notification_id, app_id, created_at)
                SELECT CASE WHEN n % 2 = 0 THEN $2 ELSE $3 END, notification_id, $4, now() FROM numbered
                """, [RaveID(sent.notificationId)!, user, merged, PushFixture.appID])
            let request = ExportV1.ExportUserRequest(
                exportId: "export-many", userId: user.hex, mergedUserIds: [merged.hex])
            let export = try await Self.export(fixture, request)
            #expect(export.pages == 3)
            #expect(export.pageSizes.allSatisfy { $0 <= ExportPage.maximumRecords })
            let inbox = export.records("inbox").map { "\($0["user_id"]!) \($0["notification_id"]!)" }
            #expect(inbox.count == 1201 && Set(inbox).count == 1201)
            #expect(export.records("deliveries").count == 1201)

            // Tiny pages: 7 records or 900 bytes at most, resuming inside and across sections.
            let small = try await ExportChecks.export(request, maximumPages: 2000) { page in
                ExportV1.ExportUserResponse(
                    try await UserExport(page).page(
                        of: ExportStore.sections, ids: [user, merged], in: fixture.pool, maximumRecords: 7,
                        maximumBytes: 900))
            }
            #expect(small.pageSizes.allSatisfy { (1...7).contains($0) })
            #expect(small.pageBytes.allSatisfy { $0 <= 900 })
            #expect(small.pages > 2403 / 7)
            for section in ["device_tokens", "deliveries", "inbox"] {
                let records = small.raw[section] ?? []
                #expect(records.count == export.raw[section]?.count)
                #expect(Set(records) == Set(export.raw[section] ?? []))
            }
        }
    }

    @Test("a cursor this service did not write, a bad id or export id is INVALID_ARGUMENT; only identity may ask")
    func exportRefusesBadRequestsAndCallersOtherThanIdentity() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random().hex
            let participant = PushExportParticipant(dependencies: fixture.dependencies)
            try await ExportChecks.serving(participant, as: "push", group: PushFixture.group) { identity, gateway in
                let good = ExportV1.ExportUserRequest(exportId: "export-1", userId: user)
                #expect(try await identity.exportUser(good).nextCursor == "")
                let valid = ExportCursor(section: "inbox", key: [user, user]).text
                let resumed = try await identity.exportUser(.init(exportId: "e", userId: user, cursor: valid))
                #expect(resumed.nextCursor == "")
                let ownBad = [
                    ExportCursor(section: "device_tokens", key: ["x"]),
                    ExportCursor(section: "deliveries", key: [user]),
                    ExportCursor(section: "inbox", key: [user, "1"]),
                    ExportCursor(section: "merges", key: ["a\u{0}"]),
                ].map { ExportV1.ExportUserRequest(exportId: "e", userId: user, cursor: $0.text) }
                for request in ExportChecks.malformedRequests(user: user) + ownBad {
                    let code = await ErasureChecks.status { _ = try await identity.exportUser(request) }
                    #expect(code == .invalidArgument, "\(request)")
                }
                let refused = await ErasureChecks.status { _ = try await gateway.exportUser(good) }
                #expect(refused == .permissionDenied)
            }
        }
    }
}
