import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

@Suite("Operators list merges")
struct AdminMergeReadsTests {
    typealias Harness = IdentityHarness

    /// Merges the guest of `source` into the guest of `target` through the saga, as a login that merges does.
    static func merge(_ source: RaveID, into target: RaveID, _ harness: Harness) async throws -> RaveID {
        let saga = harness.dependencies.mergeSaga
        return try await harness.pool.transaction {
            try await saga.merge(source: source, into: target, appID: nil, in: $0)
        }
        .mergeID
    }

    @Test func listMergesFiltersByStateAndUserPagesNewestFirstAndNamesTheMergedIds() async throws {
        let social = IdentityConfiguration.MergeParticipant(name: "social", host: "127.0.0.1", port: 9)
        try await Harness.with(configure: { $0.mergeParticipants = [social] }) { harness in
            let app = try await harness.makeApplication()
            var users: [RaveID] = []
            for device in 0..<5 {
                users.append(
                    try parseRaveID(try await harness.guestLogin(appID: app.appId, deviceID: "d\(device)").userID))
            }
            // Nobody delivers to the participant: the merges stay pending until one is acknowledged here.
            let first = try await Self.merge(users[1], into: users[0], harness)
            let second = try await Self.merge(users[2], into: users[0], harness)
            let third = try await Self.merge(users[4], into: users[3], harness)
            try await MergeStore(database: harness.pool).acknowledge(mergeID: first, participant: "social")

            let context = OperatorTests.certificate("ListMerges")
            let all = try await harness.admin.listMerges(.init(), context: context)
            #expect(Set(all.merges.map(\.mergeId)) == Set([first, second, third].map(\.hex)))
            #expect(all.mergedUserIds.isEmpty && all.nextPageToken.isEmpty)
            let pending = try await harness.admin.listMerges(.init(state: .pending), context: context)
            #expect(Set(pending.merges.map(\.mergeId)) == Set([second, third].map(\.hex)))
            #expect(pending.merges.allSatisfy { $0.pendingParticipants == ["social"] })
            let completed = try await harness.admin.listMerges(.init(state: .completed), context: context)
            #expect(completed.merges.map(\.mergeId) == [first.hex])
            #expect(completed.merges.first?.acknowledgedBy == ["social"])

            let ofTarget = try await harness.admin.listMerges(.init(userId: users[0].hex), context: context)
            #expect(Set(ofTarget.merges.map(\.mergeId)) == Set([first, second].map(\.hex)))
            #expect(ofTarget.mergedUserIds == [users[1], users[2]].map(\.hex))

            // One a page, newest first, every merge once.
            var seen: [String] = []
            var token = ""
            repeat {
                let page = try await harness.admin.listMerges(.init(pageSize: 1, pageToken: token), context: context)
                #expect(page.merges.count <= 1)
                seen += page.merges.map(\.mergeId)
                token = page.nextPageToken
            } while !token.isEmpty && seen.count < 10
            #expect(seen == all.merges.map(\.mergeId))
            #expect(all.merges.map(\.createdAtUnixMs) == all.merges.map(\.createdAtUnixMs).sorted(by: >))
        }
    }

    /// A page reads the merges through an index, newest first or a player's, not every merge and a sort: the plan
    /// of the listing names the index when scans of the whole table are ruled out.
    @Test func listMergesReadsThroughItsIndexes() async throws {
        try await Harness.with { harness in
            func plan(user: RaveID?) async throws -> String {
                try await harness.pool.transaction { transaction in
                    try await transaction.query("SET LOCAL enable_seqscan = off")
                    let rows = try await transaction.query(
                        "EXPLAIN " + MergeStore.selectPage.sql, [nil as String?, user, nil, nil, Int64(51)])
                    return try rows.map { try $0.decode(String.self, column: "QUERY PLAN") }.joined(separator: "\n")
                }
            }
            let newest = try await plan(user: nil)
            #expect(newest.contains("merges_by_time"), "\(newest)")
            let ofPlayer = try await plan(user: RaveID(high: 1, low: 2))
            #expect(ofPlayer.contains("merges_by_target"), "\(ofPlayer)")
            #expect(!ofPlayer.contains("Seq Scan"), "\(ofPlayer)")
        }
    }

    @Test func listMergesRefusesBadInputInOurWordsAndIsOpenToViewers() async throws {
        try await Harness.with { harness in
            let application = try await harness.makeApplication()
            let context = OperatorTests.certificate("ListMerges")
            let cases: [(IdentityV1.ListMergesRequest, String)] = [
                (
                    .init(state: .init(rawValue: 9)),
                    "state must be MERGE_STATE_PENDING, MERGE_STATE_COMPLETED or unspecified, got 9"
                ),
                (.init(userId: "ABC"), "user_id must be 32 lowercase hex digits, got \"ABC\""),
                (.init(pageSize: 101), "page_size must be 1…100 (0 means 50), got 101"),
                (.init(pageToken: "12.zz"), "page_token must be a next_page_token ListMerges returned"),
            ]
            for (request, message) in cases {
                let refused = await statusCode { _ = try await harness.admin.listMerges(request, context: context) }
                #expect(refused?.code == .invalidArgument)
                #expect(refused?.message == message)
            }
            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: application.publisherId)
            let listed = try await harness.admin.listMerges(
                .init(), context: OperatorTests.operatorContext(viewer.tokens, "ListMerges"))
            #expect(listed.merges.isEmpty)
        }
    }

    @Test func retryMergeParticipantMakesAParticipantWaitingOnItsBackoffDueNow() async throws {
        let social = IdentityConfiguration.MergeParticipant(name: "social", host: "127.0.0.1", port: 9)
        let wallet = IdentityConfiguration.MergeParticipant(name: "wallet", host: "127.0.0.1", port: 9)
        try await Harness.with(configure: { $0.mergeParticipants = [social, wallet] }) { harness in
            let application = try await harness.makeApplication()
            let source = try parseRaveID(try await harness.guestLogin(appID: application.appId, deviceID: "a").userID)
            let target = try parseRaveID(try await harness.guestLogin(appID: application.appId, deviceID: "b").userID)
            let merge = try await Self.merge(source, into: target, harness)
            try await MergeStore(database: harness.pool).acknowledge(mergeID: merge, participant: "wallet")
            // As the delivery leaves a participant that failed: its event waits for a later attempt.
            _ = try await harness.pool.query(
                """
                UPDATE outbox_events SET attempts = 7, next_attempt_at = now() + interval '5 minutes'
                WHERE key = 'social' AND delivered_at IS NULL
                """)
            let dueNow = "SELECT count(*) FROM outbox_events WHERE key = 'social' AND next_attempt_at <= now()"
            #expect(try await harness.pool.query(dueNow).first?.decode(Int64.self, at: 0) == 0)

            let support = try await OperatorTests.enrol(
                harness, email: "support@example.com", role: .support, publisherID: application.publisherId)
            let context = OperatorTests.operatorContext(support.tokens, "RetryMergeParticipant")
            let retried = try await harness.admin.retryMergeParticipant(
                .init(mergeId: merge.hex, participant: "social"), context: context)
            #expect(retried.rescheduled == 1)
            #expect(try await harness.pool.query(dueNow).first?.decode(Int64.self, at: 0) == 1)
            let again = try await harness.admin.retryMergeParticipant(
                .init(mergeId: merge.hex, participant: "social"), context: context)
            #expect(again.rescheduled == 0)

            let cases: [(IdentityV1.RetryMergeParticipantRequest, StatusCode, String)] = [
                (
                    .init(mergeId: merge.hex, participant: "wallet"), .failedPrecondition,
                    "participant \"wallet\" already acknowledged merge \(merge.hex); there is nothing to retry"
                ),
                (
                    .init(mergeId: merge.hex, participant: "gifts"), .notFound,
                    "merge \(merge.hex) has no participant \"gifts\"; its participants are \"wallet\", \"social\""
                ),
                (.init(mergeId: RaveID.random().hex, participant: "social"), .notFound, ""),
                (
                    .init(mergeId: "M", participant: "social"), .invalidArgument,
                    "merge_id must be 32 lowercase hex digits, got \"M\""
                ),
                (.init(mergeId: merge.hex, participant: ""), .invalidArgument, ""),
            ]
            for (request, code, message) in cases {
                let refused = await statusCode {
                    _ = try await harness.admin.retryMergeParticipant(request, context: context)
                }
                #expect(refused?.code == code, "\(request)")
                if !message.isEmpty { #expect(refused?.message == message) }
            }
            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: application.publisherId)
            let refused = await statusCode {
                _ = try await harness.admin.retryMergeParticipant(
                    .init(mergeId: merge.hex, participant: "social"),
                    context: OperatorTests.operatorContext(viewer.tokens, "RetryMergeParticipant"))
            }
            #expect(refused?.code == .permissionDenied)
        }
    }
}
