import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Push

/// A game keeps a merged-away player's token, and other services name players by old ids: all of it is the
/// target's.
@Suite("Push: calls naming a merged-away player")
struct PushMergedIDTests {
    @Test("tokens registered and notifications sent under the old id after the merge are the target's")
    func callsUnderTheOldIDAreTheTargets() async throws {
        try await PushFixture.with { fixture in
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await fixture.register(guest, token: "old-phone")
            try await fixture.register(bob, token: "tablet")
            try await fixture.mergePush(guest, into: bob)

            try await fixture.register(guest, token: "new-phone")
            let tokens = try await fixture.service.getTokenInfo(
                PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(bob)
            ).tokens
            #expect(Set(tokens.map(\.token)) == ["old-phone", "tablet", "new-phone"])
            #expect(try await fixture.rows(of: guest) == 0)

            // Another service still naming the old id (and the new one: one player) notifies the target once.
            let sent = try await fixture.send([guest, bob])
            #expect(sent.queued == 3, "one delivery per device of the one player")
            let inbox = try await fixture.service.listInbox(
                PushV1.ListInboxRequest(), context: PushFixture.playerContext(guest))
            #expect(inbox.entries.count == 1, "the inbox read under the old id is the target's, with one entry")
        }
    }

    @Test("registrations under both ids racing the merge all end on the target")
    func registrationsRacingTheMergeEndOnTheTarget() async throws {
        try await PushFixture.with { fixture in
            let (bob, guest) = (RaveID.random(), RaveID.random())
            let merges = fixture.dependencies.merges
            async let merged: Void = fixture.mergePush(guest, into: bob)
            let results = await ConcurrentCalls.run(30) { index in
                try await merges.tracking {
                    try await fixture.register(index.isMultiple(of: 2) ? guest : bob, token: "device-\(index)")
                }
            }
            try await merged
            #expect(ConcurrentCalls.failures(results).isEmpty)
            #expect(try await fixture.rows(of: guest) == 0)
            let tokens = try await fixture.service.getTokenInfo(
                PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(bob)
            ).tokens
            #expect(tokens.count == 30)
        }
    }
}

extension PushFixture {
    /// Merges as identity's saga does.
    func mergePush(_ source: RaveID, into target: RaveID) async throws {
        _ = try await PushMergeParticipant(dependencies: dependencies).mergeUsers(
            MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.hex, targetUserId: target.hex),
            context: PushFixture.serviceContext())
    }

    /// Device tokens and inbox entries still held by `user`.
    func rows(of user: RaveID) async throws -> Int {
        try await pool.query(
            "SELECT (SELECT count(*) FROM device_tokens WHERE user_id = $1) + (SELECT count(*) FROM inbox_entries WHERE user_id = $1)",
            [user]
        )[0].decode(Int.self, at: 0)
    }
}
