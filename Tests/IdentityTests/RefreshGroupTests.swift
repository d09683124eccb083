import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Refreshes rotated many in one statement (`SessionStore.rotate`, through `IdentityDependencies.rotations`):
/// refreshes that arrive together all rotate, a token presented twice at once rotates once and counts as reuse, and
/// two statements over the same sessions, each in its own order, both finish.
@Suite struct RefreshGroupTests {
    @Test func refreshesArrivingTogetherEachRotateTheirOwnSession() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            var first: [IdentityV1.SessionTokens] = []
            for device in 0..<64 {
                first.append(
                    try #require(try await harness.guestLogin(appID: app.appId, deviceID: "d\(device)").sessionTokens))
            }
            let player = harness.player
            let refreshed = try await withThrowingTaskGroup(of: (Int, IdentityV1.SessionTokens?).self) { group in
                for (index, tokens) in first.enumerated() {
                    group.addTask {
                        let response = try await player.refreshSession(
                            .init(refreshToken: tokens.refreshToken), context: IdentityHarness.anonymous)
                        return (index, response.tokens)
                    }
                }
                var answers = [IdentityV1.SessionTokens?](repeating: nil, count: first.count)
                for try await (index, tokens) in group { answers[index] = tokens }
                return answers
            }
            for (before, after) in zip(first, refreshed) {
                let after = try #require(after)
                #expect(after.sessionId == before.sessionId)
                #expect(after.refreshToken != before.refreshToken)
            }
            // Each new token is its session's latest: a second round rotates all of them again.
            for tokens in refreshed {
                let again = try await player.refreshSession(
                    .init(refreshToken: try #require(tokens).refreshToken), context: IdentityHarness.anonymous)
                #expect(again.tokens?.sessionId == tokens?.sessionId)
            }
        }
    }

    @Test func aTokenPresentedManyTimesAtOnceRotatesAtMostOnceAndEndsTheSession() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try #require(try await harness.guestLogin(appID: app.appId, deviceID: "copied").sessionTokens)
            let player = harness.player
            let outcomes = await withTaskGroup(of: Result<String, RPCError>.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        do {
                            let response = try await player.refreshSession(
                                .init(refreshToken: login.refreshToken), context: IdentityHarness.anonymous)
                            return .success(response.tokens?.refreshToken ?? "")
                        } catch {
                            return .failure(RPCError(mapping: error, requestID: "test"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let rotated = outcomes.compactMap { try? $0.get() }
            let refused = outcomes.compactMap { outcome -> RPCError? in
                if case .failure(let error) = outcome { return error }
                return nil
            }
            #expect(rotated.count <= 1, "\(outcomes)")
            #expect(refused.allSatisfy { $0.code == .unauthenticated }, "\(refused)")
            #expect(refused.contains { $0.message.contains("already used") })
            // The copies ended the family: the token one refresh got is refused too.
            for token in rotated {
                let after = await statusCode {
                    _ = try await player.refreshSession(.init(refreshToken: token), context: IdentityHarness.anonymous)
                }
                #expect(after?.code == .unauthenticated)
            }
        }
    }

    @Test func statementsOverTheSameSessionsInOppositeOrdersBothFinishAndRotateEachOnce() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            var tokens: [String] = []
            for device in 0..<300 {
                tokens.append(
                    try #require(try await harness.guestLogin(appID: app.appId, deviceID: "o\(device)").sessionTokens)
                        .refreshToken)
            }
            // Two statements name the same sessions at once, one forwards and one backwards, with the planner kept
            // to index lookups as on a large table. Each must finish (no deadlock abort) and every session rotate
            // once. A test-sized database did not deadlock even without the statement's lock order (the plan visits
            // the sessions in key order here), so this guards the outcome, not the order itself.
            let pool = harness.pool
            let rotated = try await withThrowingTaskGroup(of: Int.self) { group in
                for order in [tokens, tokens.reversed()] {
                    group.addTask {
                        try await pool.withConnection { connection in
                            for setting in ["enable_hashjoin", "enable_mergejoin", "enable_seqscan"] {
                                try await connection.query(PostgresQuery("SET \(setting) = off"))
                            }
                            return try await SessionStore(database: connection).rotate(
                                refreshTokens: order, lifetime: 3600
                            ).compactMap { $0 }.count
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            // Every session rotated exactly once, by whichever statement locked it first.
            #expect(rotated == tokens.count)
        }
    }
}
