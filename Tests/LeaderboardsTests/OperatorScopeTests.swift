import Foundation
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Leaderboards

/// Operators reach only their own publisher's boards and achievements (docs/leaderboards.md, "Operator scope"): the
/// real identity answers which publisher an application belongs to, and leaderboards runs with its production wiring.
@Suite("Leaderboards operator scope", .timeLimit(.minutes(3)))
struct OperatorScopeTests {
    static func with(_ body: (OperatorScopeStack) async throws -> Void) async throws {
        try await OperatorScopeStack.with(
            "leaderboards", migrations: LeaderboardsMain.migrationsDirectory,
            settings: ["RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "off"],
            services: { try await LeaderboardsMain.services(context: $0) }, body)
    }

    static func repositoryPath(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(relative).path
    }

    static func board(_ app: String, key: String = "points") -> LeaderboardsV1.DefineLeaderboardRequest {
        .init(appId: app, definition: .init(key: key, name: "Points", active: true))
    }

    static func achievement(_ app: String, key: String = "first") -> LeaderboardsV1.DefineAchievementRequest {
        .init(appId: app, definition: .init(key: key, name: "First"))
    }

    /// The board keys a player of `app` sees.
    static func boards(_ stack: OperatorScopeStack, app: String) async throws -> [String] {
        try await LeaderboardsV1.LeaderboardsClient(caller: stack.client).listLeaderboards(
            .init(),
            options: CallOptions(
                timeout: .seconds(10),
                metadata: [
                    MetadataKey.callerUserID: RaveID.random().hex, MetadataKey.callerAppID: app,
                    MetadataKey.callerScopes: "player authenticated",
                ])
        ).leaderboards.compactMap { $0.definition?.key }
    }

    @Test func anOperatorDefinesItsOwnPublishersBoardsAndAchievements() async throws {
        try await Self.with { stack in
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.client)
            for app in [stack.appA, stack.otherAppA] {
                _ = try await admin.defineLeaderboard(Self.board(app), options: stack.operatorOfA())
                _ = try await admin.defineAchievement(Self.achievement(app), options: stack.operatorOfA())
                _ = try await admin.rebuildIndex(
                    .init(appId: app, leaderboardKey: "points"), options: stack.operatorOfA())
                #expect(try await Self.boards(stack, app: app) == ["points"])
            }
        }
    }

    @Test func anOperatorOfAnotherPublisherIsRefusedAndNothingChanges() async throws {
        try await Self.with { stack in
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.client)
            _ = try await admin.defineLeaderboard(Self.board(stack.appA), options: stack.operatorOfA())
            let refusals = [
                await rpcFailure {
                    _ = try await admin.defineLeaderboard(
                        Self.board(stack.appA, key: "stolen"), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.defineAchievement(Self.achievement(stack.appA), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.rebuildIndex(
                        .init(appId: stack.appA, leaderboardKey: "points"), options: stack.operatorOfB())
                },
                // The reads are the publisher's too.
                await rpcFailure {
                    _ = try await admin.listLeaderboards(.init(appId: stack.appA), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.getTopScores(
                        .init(appId: stack.appA, leaderboardKey: "points", count: 10), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.getUserStanding(
                        .init(appId: stack.appA, leaderboardKey: "points", userId: RaveID.random().hex),
                        options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.listAchievements(.init(appId: stack.appA), options: stack.operatorOfB())
                },
            ]
            for refusal in refusals {
                #expect(refusal?.code == .permissionDenied)
                #expect(
                    refusal?.message
                        == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                        + "belongs to publisher \(stack.publisherA)")
            }
            #expect(try await Self.boards(stack, app: stack.appA) == ["points"])
            // An application identity does not know is NOT_FOUND, as for an unknown board.
            let unknown = RaveID.random().hex
            let missing = await rpcFailure {
                _ = try await admin.defineLeaderboard(Self.board(unknown), options: stack.operatorOfB())
            }
            #expect(missing?.code == .notFound)
            #expect(missing?.message == "no application \(unknown)")
        }
    }

    @Test func anOwnerOfAllPublishersAndTheAdminCertificateReachEveryApplication() async throws {
        try await Self.with { stack in
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.client)
            _ = try await admin.defineLeaderboard(Self.board(stack.appA), options: stack.ownerOfAll)
            _ = try await admin.defineLeaderboard(Self.board(stack.appB), options: stack.certificate)
            _ = try await admin.defineAchievement(Self.achievement(stack.appB), options: stack.ownerOfAll)
            _ = try await admin.rebuildIndex(
                .init(appId: stack.appA, leaderboardKey: "points"), options: stack.certificate)
            #expect(try await Self.boards(stack, app: stack.appA) == ["points"])
            #expect(try await Self.boards(stack, app: stack.appB) == ["points"])
        }
    }

    @Test func theServiceChecksTheRoleItselfWhateverTheGatewayLetThrough() async throws {
        try await Self.with { stack in
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.client)
            // A viewer of the right publisher, and a role no operator has: a gateway that let them through does
            // not widen what they reach.
            let viewer = await rpcFailure {
                _ = try await admin.defineLeaderboard(Self.board(stack.appA), options: stack.operatorOfA("viewer"))
            }
            #expect(viewer?.code == .permissionDenied)
            #expect(
                viewer?.message
                    == "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard needs the operator role operator or "
                    + "higher; this operator's role is viewer")
            let forged = await rpcFailure {
                _ = try await admin.defineLeaderboard(Self.board(stack.appA), options: stack.operatorOfA("root"))
            }
            #expect(forged?.code == .permissionDenied)
            #expect(forged?.message.contains("\"root\" is not an operator role") == true)
            let boards = try await Self.boards(stack, app: stack.appA)
            #expect(boards.isEmpty)
        }
    }
}
