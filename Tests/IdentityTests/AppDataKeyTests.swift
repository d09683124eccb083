import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// A first login writes no app data key: the key is the player's Rave ID until a merge makes it differ, so the merge
/// rules must hold for keys that were never written as rows.
@Suite("App data keys")
struct AppDataKeyTests {
    typealias Harness = IdentityHarness

    @Test func mergeOfPlayersWithImpliedKeysFollowsTheMergeRules() async throws {
        try await Harness.with { harness in
            let both = try await harness.makeApplication()
            let sourceOnly = try await harness.makeApplication()
            let targetOnly = try await harness.makeApplication()
            let sourceLogin = try await harness.guestLogin(appID: both.appId, deviceID: "source-device")
            let targetLogin = try await harness.guestLogin(appID: both.appId, deviceID: "target-device")
            let source = try parseRaveID(sourceLogin.userID)
            let target = try parseRaveID(targetLogin.userID)
            // A signed-in player's first call in another app is its first use of that app.
            let sourceFirstUse = try await harness.player.getAppDataKeys(
                .init(), context: Harness.playerContext(sourceLogin, appID: sourceOnly.appId))
            #expect(sourceFirstUse.selectedKey == source.hex)
            _ = try await harness.player.getAppDataKeys(
                .init(), context: Harness.playerContext(targetLogin, appID: targetOnly.appId))

            _ = try await harness.pool.transaction {
                try await harness.dependencies.mergeSaga.merge(source: source, into: target, appID: nil, in: $0)
            }

            let inBoth = try await harness.player.getAppDataKeys(
                .init(), context: Harness.playerContext(targetLogin, appID: both.appId))
            #expect(inBoth.selectedKey.isEmpty)
            #expect(inBoth.candidates.sorted() == [source.hex, target.hex].sorted())
            let inSourceOnly = try await harness.player.getAppDataKeys(
                .init(), context: Harness.playerContext(targetLogin, appID: sourceOnly.appId))
            #expect(inSourceOnly.selectedKey == source.hex)
            #expect(inSourceOnly.candidates.isEmpty)
            let inTargetOnly = try await harness.player.getAppDataKeys(
                .init(), context: Harness.playerContext(targetLogin, appID: targetOnly.appId))
            #expect(inTargetOnly.selectedKey == target.hex)
            #expect(inTargetOnly.candidates.isEmpty)
        }
    }

    @Test func firstUseAfterAMergeGetsTheTargetsRaveID() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let later = try await harness.makeApplication()
            let sourceLogin = try await harness.guestLogin(appID: app.appId, deviceID: "source-device")
            let targetLogin = try await harness.guestLogin(appID: app.appId, deviceID: "target-device")
            let source = try parseRaveID(sourceLogin.userID)
            let target = try parseRaveID(targetLogin.userID)
            _ = try await harness.pool.transaction {
                try await harness.dependencies.mergeSaga.merge(source: source, into: target, appID: nil, in: $0)
            }
            // The source's old session acts as the target, in an app neither had played.
            let context = Harness.playerContext(sourceLogin, appID: later.appId)
            let keys = try await harness.player.getAppDataKeys(.init(), context: context)
            #expect(keys.selectedKey == target.hex)
            #expect(keys.candidates.isEmpty)
            let selected = try await harness.player.selectAppDataKey(.init(key: target.hex), context: context)
            #expect(selected.selectedKey == target.hex)
            let wrong = await statusCode {
                _ = try await harness.player.selectAppDataKey(.init(key: source.hex), context: context)
            }
            #expect(wrong?.code == .invalidArgument)
        }
    }
}
