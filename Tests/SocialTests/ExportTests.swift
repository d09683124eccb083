import Foundation
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Social

@Suite("Export")
struct ExportTests {
    /// A list of this test's own, and its id.
    private static func makeList(_ harness: SocialHarness, key: String) async throws -> Int64 {
        try await harness.dependencies.pool.query(
            "INSERT INTO lists (publisher_id, app_id, key, kind, max_members) VALUES ($1, $2, $3, 1, 100000) RETURNING list_id",
            [RaveID(harness.publisherID), RaveID(harness.appID), key])[0].decode(Int64.self, at: 0)
    }

    /// Both rows of a relationship: `owner`'s in `direction` and the peer's mirror.
    private static func relate(
        _ pool: PostgresPool, list: Int64, _ owner: RaveID, _ direction: Int, _ peer: RaveID
    ) async throws {
        let mirror = direction == 0 ? 0 : 3 - direction
        _ = try await pool.query(
            "INSERT INTO edges (list_id, owner_id, direction, peer_id) VALUES ($1, $2, $3, $4), ($1, $4, $5, $2)",
            [list, owner, Int64(direction), peer, Int64(mirror)])
    }

    /// Every relationship, request, block, contact and merge of the user and of an id merged into it (found through
    /// `merged_users`) and of an id only the request names, in the documented shapes; other users' rows (their
    /// mirror edges, their blocks of the user, their contact matched to the user, everything of a bystander) stay
    /// out.
    @Test func exportHoldsEveryRowOfTheUserAndMergedIDsAndNoOtherUsers() async throws {
        try await SocialHarness.with { harness in
            let pool = harness.dependencies.pool
            let list = try await Self.makeList(harness, key: "export-friends")
            let (user, merged, namedOnly, other) = (RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random())
            let (friend, followed, asked, asker, blocked, blocker) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            let strangers = (0..<4).map { _ in RaveID.random() }
            try await Self.relate(pool, list: list, user, 0, friend)
            try await Self.relate(pool, list: list, merged, 1, followed)
            try await Self.relate(pool, list: list, other, 0, strangers[0])
            _ = try await pool.query(
                "INSERT INTO friend_requests (list_id, sender_id, recipient_id) VALUES ($1, $2, $3), ($1, $4, $5), ($1, $6, $7)",
                [list, user, asked, asker, merged, other, strangers[1]])
            _ = try await pool.query(
                "INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2), ($3, $1), ($4, $2), ($5, $6)",
                [user, blocked, blocker, namedOnly, other, strangers[2]])
            _ = try await pool.query(
                """
                INSERT INTO contacts (owner_id, contact_key, user_id, display_name) VALUES
                    ($1, 'phonebook:ann@example.test', NULL, $3), ($2, 'rave:' || replace($1::text, '-', ''), $1, 'Me'),
                    ($2, 'phonebook:x@example.test', NULL, 'Bystander contact')
                """, [user, other, "Ann \"the\" tester\n\u{1}é😀"])
            _ = try await pool.query(
                """
                INSERT INTO contact_sources (owner_id, contact_key, source, third_party, external_id) VALUES
                    ($1, 'phonebook:ann@example.test', 4, '', 'ann@example.test'),
                    ($2, 'phonebook:x@example.test', 4, '', 'x@example.test')
                """, [user, other])
            _ = try await pool.query(
                "INSERT INTO merged_users (source_id, target_id, merge_id) VALUES ($1, $2, 'merge-export')",
                [merged, user])
            _ = try await pool.query(
                "INSERT INTO applied_merges (merge_id, source_id, target_id) VALUES ('merge-export', $1, $2), ('merge-other', $3, $4)",
                [merged, user, strangers[3], other])

            let request = ExportV1.ExportUserRequest(
                exportId: "export-1", userId: user.hex, mergedUserIds: [namedOnly.hex])
            let participant = SocialExportParticipant(dependencies: harness.dependencies)
            let export = try await ExportChecks.export(request) {
                try await participant.exportUser($0, context: SocialHarness.serviceContext)
            }
            #expect(export.pages == 1)
            #expect(export.order == ["friends", "following", "friend_requests", "blocks", "contacts", "merges"])
            let friends = export.records("friends")
            #expect(friends.count == 1)
            #expect(
                friends.first?["user_id"] as? String == user.hex && friends.first?["peer_id"] as? String == friend.hex)
            #expect(friends.first?["list_key"] as? String == "export-friends")
            #expect(friends.first?["app_id"] as? String == harness.appID)
            #expect(ExportChecks.isTime(friends.first?["created_at"]))
            #expect(export.records("following").map { $0["peer_id"] as? String } == [followed.hex])
            #expect(export.records("following").first?["user_id"] as? String == merged.hex)
            let requests = export.records("friend_requests")
            #expect(
                Set(requests.map { "\($0["direction"]!) \($0["sender_id"]!) \($0["recipient_id"]!)" })
                    == ["sent \(user.hex) \(asked.hex)", "received \(asker.hex) \(merged.hex)"])
            #expect(
                Set(export.records("blocks").map { "\($0["user_id"]!) \($0["blocked_id"]!)" })
                    == ["\(user.hex) \(blocked.hex)", "\(namedOnly.hex) \(blocked.hex)"])
            let contacts = export.records("contacts")
            #expect(contacts.count == 1)
            #expect(contacts.first?["display_name"] as? String == "Ann \"the\" tester\n\u{1}é😀")
            #expect(contacts.first?["source"] as? String == "phonebook")
            #expect(contacts.first?["external_id"] as? String == "ann@example.test")
            #expect(contacts.first?["matched_user_id"] is NSNull)
            #expect(export.records("merges").map { $0["merge_id"] as? String } == ["merge-export"])
            // Nothing of the bystander's, of the other users' own rows about the user, or of their peers.
            let bytes = export.raw.values.joined().map { String(decoding: $0, as: UTF8.self) }.joined()
            for id in [other, blocker] + strangers { #expect(!bytes.contains(id.hex)) }
            #expect(!bytes.contains("Bystander contact") && !bytes.contains("\"Me\""))
            // Exporting changed nothing.
            let before = try await ErasureChecks.rowCounts(in: pool)
            _ = try await participant.exportUser(request, context: SocialHarness.serviceContext)
            #expect(try await ErasureChecks.rowCounts(in: pool) == before)
        }
    }

    /// More rows than a page holds: the pages together are every row once, each page within its limits, and
    /// small pages (limits lowered) resume inside and across sections.
    @Test func exportPagesConcatenateToEveryRowOnce() async throws {
        try await SocialHarness.with { harness in
            let pool = harness.dependencies.pool
            let list = try await Self.makeList(harness, key: "export-many")
            let user = RaveID.random()
            _ = try await pool.query(
                """
                INSERT INTO edges (list_id, owner_id, direction, peer_id)
                SELECT $1, $2, 2, gen_random_uuid() FROM generate_series(1, 2300)
                """, [list, user])
            _ = try await pool.query(
                "INSERT INTO blocks (blocker_id, blocked_id) SELECT $1, gen_random_uuid() FROM generate_series(1, 30)",
                [user])
            let request = ExportV1.ExportUserRequest(exportId: "export-many", userId: user.hex)
            let participant = SocialExportParticipant(dependencies: harness.dependencies)
            let export = try await ExportChecks.export(request) {
                try await participant.exportUser($0, context: SocialHarness.serviceContext)
            }
            #expect(export.pages == 3)
            #expect(export.pageSizes.allSatisfy { $0 <= 1000 })
            let followers = export.records("followers").compactMap { $0["peer_id"] as? String }
            #expect(followers.count == 2300 && Set(followers).count == 2300)
            #expect(export.records("blocks").count == 30)

            // Tiny pages: 7 records or 600 bytes at most.
            var cursor = ""
            var seen: [String] = []
            var pages = 0
            repeat {
                let page = try await UserExport(exportID: "e", userID: user.hex, mergedUserIDs: [], cursor: cursor)
                    .page(
                        of: ExportStore.sections, ids: [user], in: pool, maximumRecords: 7, maximumBytes: 600)
                #expect(page.recordCount <= 7 && page.recordCount > 0)
                #expect(page.sections.flatMap(\.records).reduce(0) { $0 + $1.count } <= 600)
                for section in page.sections {
                    seen += section.records.map { section.name + String(decoding: $0, as: UTF8.self) }
                }
                cursor = page.nextCursor
                pages += 1
            } while !cursor.isEmpty && pages < 2000
            #expect(seen.count == 2330 && Set(seen).count == 2330)
            #expect(pages > 2330 / 7)
        }
    }

    /// A cursor this service did not write, a bad id or export id is INVALID_ARGUMENT; only identity may ask.
    @Test func exportRefusesBadRequestsAndCallersOtherThanIdentity() async throws {
        try await SocialHarness.with { harness in
            let user = RaveID.random().hex
            let participant = SocialExportParticipant(dependencies: harness.dependencies)
            try await ExportChecks.serving(participant, as: "social", group: SocialHarness.group) {
                identity, gateway in
                let good = ExportV1.ExportUserRequest(exportId: "export-1", userId: user)
                let first = try await identity.exportUser(good)
                #expect(first.nextCursor == "")
                let valid = ExportCursor(section: "blocks", key: [user, user]).text
                let resumed = try await identity.exportUser(.init(exportId: "e", userId: user, cursor: valid))
                #expect(resumed.nextCursor == "")
                let bad: [ExportV1.ExportUserRequest] = [
                    .init(exportId: "e", userId: user, cursor: "garbage"),
                    .init(exportId: "e", userId: user, cursor: "1.nosuchsection"),
                    .init(exportId: "e", userId: user, cursor: ExportCursor(section: "blocks", key: ["x", "y"]).text),
                    .init(exportId: "e", userId: user, cursor: ExportCursor(section: "blocks", key: [user]).text),
                    .init(exportId: "e", userId: user, cursor: "1.blocks.!!!.???"),
                    .init(exportId: "e", userId: user.uppercased()),
                    .init(exportId: "e", userId: user, mergedUserIds: ["not-an-id"]),
                    .init(exportId: "", userId: user),
                    .init(exportId: String(repeating: "e", count: 129), userId: user),
                ]
                for request in bad {
                    let code = await statusCode { _ = try await identity.exportUser(request) }
                    #expect(code == .invalidArgument)
                }
                let refused = await statusCode { _ = try await gateway.exportUser(good) }
                #expect(refused == .permissionDenied)
            }
        }
    }
}
