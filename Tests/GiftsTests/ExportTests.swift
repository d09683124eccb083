import Foundation
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Gifts

@Suite("Gifts: exporting an account")
struct ExportTests {
    private static let giftFields: Set<String> = [
        "gift_id", "app_id", "gift_type_key", "sender_id", "recipient_id", "state", "sent_at", "expires_at",
        "responded_at", "request_id",
    ]

    private static func export(
        _ harness: GiftsHarness, _ request: ExportV1.ExportUserRequest
    ) async throws -> ExportChecks.Export {
        let participant = GiftsExportParticipant(dependencies: harness.dependencies)
        return try await ExportChecks.export(request) {
            try await participant.exportUser($0, context: harness.serviceContext)
        }
    }

    @Test(
        "every gift, request, invitation, link, daily count, idempotency record and merge of the user and its merged ids, in the documented shapes; nothing of another player's"
    )
    func exportHoldsEveryRowOfTheUserAndMergedIDsAndNoOtherPlayers() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            try await harness.createType("coin", dailyLimit: 10)
            let player = harness.player
            let (user, merged, friend, other) = (
                harness.identity.addUser(named: "User"), harness.identity.addUser(),
                harness.identity.addUser(named: "Friend"), harness.identity.addUser(named: "Other")
            )
            let (namedOnly, stranger) = (RaveID.random(), RaveID.random())
            let accepted = try await harness.send(from: friend, to: [user]).results[0].id
            _ = try await player.acceptGift(.init(giftId: accepted), context: harness.context(user))
            let pending = try await harness.send("coin", from: user, to: [friend]).results[0].id
            let rejected = try await harness.send(from: user, to: [friend]).results[0].id
            _ = try await player.rejectGift(.init(giftId: rejected), context: harness.context(friend))
            let fromMerged = try await harness.send(from: merged, to: [user]).results[0].id
            let made = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [friend.hex]), context: harness.context(user)
            ).results[0].id
            let grant = try await player.grantGiftRequest(.init(requestId: made), context: harness.context(friend))
            let granted = try #require(grant.gift?.giftId)
            let received = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [user.hex]), context: harness.context(friend)
            ).results[0].id
            _ = try await player.ignoreGiftRequest(.init(requestId: received), context: harness.context(user))
            _ = try await player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .facebook, externalUserId: "fb-newcomer", requestId: "r-1")]),
                context: harness.context(user))
            let code = try await player.createInstallLink(
                .init(giftTypeKey: "life", requestId: "r-1", channel: "facebook"), context: harness.context(user)
            ).code
            // Another player's own rows: none of them may show.
            let othersGift = try await harness.send("coin", from: other, to: [friend]).results[0].id
            _ = try await player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [friend.hex]), context: harness.context(other))
            _ = try await player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .google, externalUserId: "g-other", requestId: "r-o")]),
                context: harness.context(other))
            let othersCode = try await player.createInstallLink(
                .init(giftTypeKey: "life", requestId: "r-o", channel: "sms"), context: harness.context(other)
            ).code
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-export", sourceUserId: merged.hex, targetUserId: user.hex),
                context: harness.serviceContext)
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-other", sourceUserId: stranger.hex, targetUserId: other.hex),
                context: harness.serviceContext)
            // A pending gift past its expiry, rows a call left under the merged id after the merge, and under an id
            // only the request names.
            let expired = RaveID.random()
            _ = try await harness.pool.query(
                """
                INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at)
                SELECT $1, app_id, id, $2, $3, now() - interval '2 days', now() - interval '1 day'
                FROM gift_types WHERE app_id = $4 AND key = 'life'
                """, [expired, friend, user, harness.app])
            _ = try await harness.pool.query(
                """
                INSERT INTO install_links (code, app_id, creator_id, gift_type_key, request_id, channel, clicks)
                SELECT 'late-' || left(u::text, 8), $2, u, 'life', '', '', 9007199254740993
                FROM unnest($1::uuid[]) AS u
                """, [[merged, namedOnly], harness.app])

            let request = ExportV1.ExportUserRequest(
                exportId: "export-1", userId: user.hex, mergedUserIds: [namedOnly.hex])
            let before = try await ExportChecks.contents(of: harness.pool)
            let export = try await Self.export(harness, request)
            #expect(try await ExportChecks.contents(of: harness.pool) == before)
            #expect(export.pages == 1)
            #expect(
                export.order == [
                    "gifts_sent", "gifts_received", "gift_requests", "share_invitations", "share_links",
                    "daily_sends", "idempotency_records", "merges",
                ])

            let sent = export.records("gifts_sent")
            let receivedGifts = export.records("gifts_received")
            for gift in sent + receivedGifts {
                #expect(Set(gift.keys) == Self.giftFields)
                #expect(gift["app_id"] as? String == harness.app.hex && ExportChecks.isTime(gift["sent_at"]))
                #expect(ExportChecks.isTime(gift["expires_at"]))
            }
            func states(_ gifts: [[String: Any]]) -> [String: String] {
                Dictionary(uniqueKeysWithValues: gifts.map { ($0["gift_id"] as! String, $0["state"] as! String) })
            }
            // The merged id's gift to the user is now the user's own to itself: in both sections.
            #expect(
                states(sent) == [pending: "pending", rejected: "rejected", fromMerged: "pending"])
            #expect(
                states(receivedGifts) == [
                    accepted: "accepted", fromMerged: "pending", granted: "pending", expired.hex: "expired",
                ])
            let byID = Dictionary((sent + receivedGifts).map { ($0["gift_id"] as! String, $0) }) { first, _ in first }
            #expect(byID[pending]?["gift_type_key"] as? String == "coin")
            #expect(byID[pending]?["responded_at"] is NSNull && byID[pending]?["request_id"] is NSNull)
            #expect(ExportChecks.isTime(byID[accepted]?["responded_at"]))
            #expect(byID[granted]?["request_id"] as? String == made)
            #expect(byID[fromMerged]?["sender_id"] as? String == user.hex)

            let requests = export.records("gift_requests")
            #expect(
                requests.allSatisfy {
                    Set($0.keys) == [
                        "request_id", "app_id", "gift_type_key", "direction", "requester_id", "recipient_id", "state",
                        "requested_at", "responded_at", "gift_id",
                    ] && ExportChecks.isTime($0["requested_at"]) && ExportChecks.isTime($0["responded_at"])
                })
            #expect(
                Set(requests.map { "\($0["request_id"]!) \($0["direction"]!) \($0["state"]!) \($0["gift_id"]!)" })
                    == ["\(made) made granted \(granted)", "\(received) received ignored <null>"])

            let invitations = export.records("share_invitations")
            #expect(invitations.count == 1)
            let invitation = invitations.first ?? [:]
            #expect(
                Set(invitation.keys) == [
                    "invitation_id", "app_id", "gift_type_key", "sender_id", "provider", "subject",
                    "provider_request_id", "state", "created_at", "resolved_at", "gift_id",
                ])
            #expect(
                invitation["provider"] as? String == "facebook" && invitation["subject"] as? String == "fb-newcomer")
            #expect(
                invitation["provider_request_id"] as? String == "r-1" && invitation["state"] as? String == "pending")
            #expect(invitation["sender_id"] as? String == user.hex && ExportChecks.isID(invitation["invitation_id"]))
            #expect(invitation["resolved_at"] is NSNull && invitation["gift_id"] is NSNull)

            let links = export.records("share_links")
            #expect(
                links.allSatisfy {
                    Set($0.keys) == [
                        "code", "app_id", "creator_id", "gift_type_key", "request_id", "channel", "clicks",
                        "created_at",
                    ] && $0["clicks"] is String && ExportChecks.isTime($0["created_at"])
                })
            #expect(
                Set(links.map { "\($0["code"]!) \($0["creator_id"]!) \($0["clicks"]!)" }) == [
                    "\(code) \(user.hex) 0", "late-\(merged.description.prefix(8)) \(merged.hex) 9007199254740993",
                    "late-\(namedOnly.description.prefix(8)) \(namedOnly.hex) 9007199254740993",
                ])

            let daily = export.records("daily_sends")
            let today = try await harness.pool.query("SELECT ((now() AT TIME ZONE 'UTC')::date)::text")[0].decode(
                String.self, at: 0)
            #expect(daily.count == 1)
            #expect(
                Set(daily.first?.keys.map { $0 } ?? []) == [
                    "sender_id", "app_id", "gift_type_key", "day", "sent", "granted",
                ])
            #expect(daily.first?["day"] as? String == today && daily.first?["gift_type_key"] as? String == "coin")
            #expect(daily.first?["sent"] as? Int == 1 && daily.first?["granted"] as? Int == 1)

            // The user's own calls and the merged id's (moved to the user by the merge), bytes as stored.
            let stored = try await harness.pool.query(
                "SELECT operation, idempotency_key, fingerprint, response FROM idempotent_calls WHERE sender_id = $1",
                [user])
            let idempotency = export.records("idempotency_records")
            #expect(idempotency.count == stored.count && stored.count >= 3)
            for row in stored {
                let key = try row.decode(String.self, at: 1)
                let record = idempotency.first { $0["idempotency_key"] as? String == key }
                #expect(record?["operation"] as? String == (try row.decode(String.self, at: 0)))
                #expect(
                    record?["fingerprint"] as? String == Data(try row.decode([UInt8].self, at: 2)).base64EncodedString()
                )
                #expect(
                    record?["response"] as? String == Data(try row.decode([UInt8].self, at: 3)).base64EncodedString())
                #expect(record?["sender_id"] as? String == user.hex && ExportChecks.isTime(record?["created_at"]))
            }

            #expect(export.records("merges").map { $0["merge_id"] as? String } == ["merge-export"])
            #expect(
                Set(export.records("merges").first?.keys.map { $0 } ?? []) == [
                    "merge_id", "source_id", "target_id", "applied_at",
                ])
            let text = export.raw.values.joined().map { String(decoding: $0, as: UTF8.self) }.joined()
            for absent in [other.hex, stranger.hex, othersGift, othersCode, "g-other"] {
                #expect(!text.contains(absent), "\(absent)")
            }
        }
    }

    @Test("more rows than a page: the pages hold every row once, within the limits, also in tiny pages")
    func exportPagesConcatenateToEveryRowOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let (user, merged) = (RaveID.random(), RaveID.random())
            _ = try await harness.pool.query(
                """
                INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at)
                SELECT gen_random_uuid(), app_id, id, CASE WHEN n % 3 = 0 THEN $2 ELSE $1 END, gen_random_uuid(), now(),
                       now() + interval '1 day'
                FROM gift_types, generate_series(1, 1400) AS n WHERE app_id = $3
                """, [user, merged, harness.app])
            _ = try await harness.pool.query(
                """
                INSERT INTO install_links (code, app_id, creator_id, gift_type_key, request_id, channel)
                SELECT 'c' || n || chr(45 + (n % 3) * 25) || '"é', $2, $1, 'life', '', '' FROM generate_series(1, 30) AS n
                """, [user, harness.app])
            _ = try await harness.pool.query(
                """
                INSERT INTO idempotent_calls (sender_id, operation, idempotency_key, fingerprint, response)
                SELECT u, 'send', 'k-' || n, '\\x00ff'::bytea, '\\x0102'::bytea
                FROM generate_series(1, 12) AS n, unnest($1::uuid[]) AS u
                """, [[user, merged]])
            let request = ExportV1.ExportUserRequest(
                exportId: "export-many", userId: user.hex, mergedUserIds: [merged.hex])
            let export = try await Self.export(harness, request)
            #expect(export.pages == 2)
            #expect(export.pageSizes.allSatisfy { $0 <= ExportPage.maximumRecords })
            let gifts = export.records("gifts_sent").compactMap { $0["gift_id"] as? String }
            #expect(gifts.count == 1400 && Set(gifts).count == 1400)
            #expect(export.records("share_links").count == 30 && export.records("idempotency_records").count == 24)

            // Tiny pages: 7 records or 700 bytes at most, resuming inside and across sections.
            let small = try await ExportChecks.export(request, maximumPages: 2000) { page in
                ExportV1.ExportUserResponse(
                    try await UserExport(page).page(
                        of: ExportStore.sections, ids: [user, merged], in: harness.pool, maximumRecords: 7,
                        maximumBytes: 700))
            }
            #expect(small.pageSizes.allSatisfy { (1...7).contains($0) })
            #expect(small.pageBytes.allSatisfy { $0 <= 700 })
            #expect(small.pages > 1454 / 7)
            for section in ["gifts_sent", "share_links", "idempotency_records"] {
                let records = small.raw[section] ?? []
                #expect(records.count == export.raw[section]?.count)
                #expect(Set(records) == Set(export.raw[section] ?? []))
            }
        }
    }

    @Test("a daily count's day reads YYYY-MM-DD whatever the session's DateStyle")
    func exportWritesDaysInOneFormatWhateverTheDateStyle() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType("coin", dailyLimit: 10)
            let user = RaveID.random()
            _ = try await harness.pool.query(
                """
                INSERT INTO daily_sends (sender_id, gift_type_id, day, sent, granted)
                SELECT $1, id, DATE '2026-03-04' + n, 1, 1 FROM gift_types, generate_series(0, 2) AS n
                """, [user])
            let export = try UserExport(exportID: "e", userID: user.hex, mergedUserIDs: [], cursor: "")
            for style in ["ISO, MDY", "SQL, DMY", "German", "Postgres, MDY"] {
                let page = try await harness.pool.transaction { transaction in
                    _ = try await transaction.query("SELECT set_config('DateStyle', $1, true)", [style])
                    return try await export.page(of: ExportStore.sections, ids: [user], in: transaction)
                }
                let days = try page.sections.filter { $0.name == "daily_sends" }.flatMap(\.records).map {
                    try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]
                }.map { $0?["day"] as? String }
                #expect(days == ["2026-03-04", "2026-03-05", "2026-03-06"], "\(style)")
            }
        }
    }

    @Test("a cursor this service did not write, a bad id or export id is INVALID_ARGUMENT; only identity may ask")
    func exportRefusesBadRequestsAndCallersOtherThanIdentity() async throws {
        try await GiftsHarness.with { harness in
            let user = RaveID.random().hex
            let participant = GiftsExportParticipant(dependencies: harness.dependencies)
            try await ExportChecks.serving(participant, as: "gifts", group: TestDatabase.group) { identity, gateway in
                let good = ExportV1.ExportUserRequest(exportId: "export-1", userId: user)
                #expect(try await identity.exportUser(good).nextCursor == "")
                let valid = ExportCursor(section: "daily_sends", key: [user, "1", "2026-01-01"]).text
                let resumed = try await identity.exportUser(.init(exportId: "e", userId: user, cursor: valid))
                #expect(resumed.nextCursor == "")
                let ownBad = [
                    ExportCursor(section: "gifts_sent", key: ["x"]),
                    ExportCursor(section: "gifts_received", key: [user, user]),
                    ExportCursor(section: "daily_sends", key: [user, "one", "2026-01-01"]),
                    ExportCursor(section: "share_links", key: ["a\u{0}"]),
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
