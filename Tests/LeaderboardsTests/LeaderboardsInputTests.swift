import RaveMessages
import RavePostgres
import RaveProtobuf
import RaveRPC
import RaveTestSupport
import Testing

@testable import Leaderboards

/// Input leaderboards must refuse: text with NULs, ids in another spelling, and numbers outside the ranges the
/// proto documents.
@Suite struct LeaderboardsInputTests {
    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("weekly")
            let user = RaveID.random()
            let method = try #require(
                service.player.methods.first { $0.name == "rave.leaderboards.v1.Leaderboards/SubmitScore" })
            // protobuf-c would have cut the key to "weekly" and scored on that board.
            let request = LeaderboardsV1.SubmitScoreRequest(leaderboardKey: "weekly\u{0}other", score: 10)
            let error = await #expect(throws: ProtoDecodingError.self) {
                _ = try await method.handler(
                    request.protobufBytes(),
                    Callers.context(user: user, app: service.app, scopes: [Caller.authenticatedScope]))
            }
            #expect(error.map { RPCError(mapping: $0, requestID: "r").code } == .invalidArgument)
            let scores = try await pool.query("SELECT count(*) FROM scores")
            #expect(try scores[0].decode(Int64.self, at: 0) == 0)
        }
    }

    @Test func appIDsInAnotherSpellingAreRefused() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let upper = service.app.uppercased()
            for request in [
                LeaderboardsV1.DefineLeaderboardRequest(
                    appId: upper, definition: .init(key: "k", name: "K", sorter: 1, active: true)),
                LeaderboardsV1.DefineLeaderboardRequest(
                    appId: "app-1", definition: .init(key: "k", name: "K", sorter: 1, active: true)),
            ] {
                await #expect(throws: LeaderboardsError.self) {
                    _ = try await service.admin.defineLeaderboard(request, context: Callers.admin(app: service.app))
                }
            }
            await #expect(throws: LeaderboardsError.self) {
                _ = try await service.admin.defineAchievement(
                    .init(appId: upper, definition: .init(key: "a", name: "A")), context: Callers.admin(app: upper))
            }
            let boards = try await pool.query("SELECT count(*) FROM leaderboards")
            #expect(try boards[0].decode(Int64.self, at: 0) == 0)
        }
    }

    @Test(arguments: [Int32(0), -1, 201])
    func pageSizesOutsideTheRangeAreRefused(_ size: Int32) async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("weekly")
            do {
                _ = try await service.player.getGlobalScores(
                    .init(leaderboardKey: "weekly", page: 1, pageSize: size),
                    context: Callers.context(user: .random(), app: service.app))
                Issue.record("page_size \(size) was accepted")
            } catch let error as LeaderboardsError {
                #expect(error.code == .invalidArgument)
                #expect(error.message == "page_size must be 1…200, got \(size)")
            }
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }
}
