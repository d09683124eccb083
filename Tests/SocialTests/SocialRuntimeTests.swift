import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTransport
import Testing

@testable import Social

@Suite("Social over mTLS")
struct SocialRuntimeTests {
    /// The social process as `make run` starts it (runtime, migrations, identity client), driven over mTLS: a
    /// player call carrying the gateway's caller metadata, then the internal methods other services use.
    @Test func friendsThroughTheServiceRuntime() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            try await SocialHarness.withDatabase(prefix: "rave_social_runtime_") { url in
                let runtime = try await ServiceRuntime.start(
                    name: "social",
                    environment: [
                        "RAVE_CERT_DIR": harness.certificates, "RAVE_LISTEN": "127.0.0.1:0",
                        "RAVE_ADMIN_LISTEN": "127.0.0.1:0", "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning",
                        "RAVE_SHUTDOWN_GRACE": "1s", "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                        "RAVE_SOCIAL_IDENTITY_ADDRESS": "127.0.0.1:\(harness.identityPort)",
                    ], migrations: .directory(SocialHarness.socialMigrations)
                ) { context in
                    try await SocialMain.services(context: context)
                }
                let running = Task { try await runtime.run() }
                let clientGroup = try EventLoopGroup(loopCount: 1)
                let connection = RPCClient(
                    host: "127.0.0.1", port: runtime.rpcPort,
                    tls: try SocialHarness.clientTLS(harness.certificates, name: "gateway"), group: clientGroup)
                let player = SocialV1.SocialClient(caller: connection)
                func asPlayer(_ user: SocialHarness.Player) -> CallOptions {
                    CallOptions(
                        timeout: .seconds(10),
                        metadata: [
                            MetadataKey.callerUserID: user.id, MetadataKey.callerAppID: harness.appID,
                            MetadataKey.callerScopes: "player",
                        ])
                }
                do {
                    let sent = try await player.sendFriendRequest(
                        .init(listKey: "friends", target: byID(bob)), options: asPlayer(alice))
                    #expect(sent.outcome == .sent)
                    _ = try await player.acceptFriendRequest(
                        .init(listKey: "friends", userId: alice.id), options: asPlayer(bob))
                    let page = try await player.queryFriends(
                        .init(query: .init(listKey: "friends")), options: asPlayer(alice))
                    #expect(page.page?.users.map(\.displayName) == ["Bob"])

                    // Internal methods serve other services (here identity's certificate), not the gateway.
                    let identity = RPCClient(
                        host: "127.0.0.1", port: runtime.rpcPort,
                        tls: try SocialHarness.clientTLS(harness.certificates, name: "identity"), group: clientGroup)
                    defer { identity.close() }
                    let fromGateway = await statusCode {
                        _ = try await SocialV1.SocialInternalClient(caller: connection).friendIds(
                            .init(userId: bob.id, appId: harness.appID))
                    }
                    #expect(fromGateway == .permissionDenied)
                    let internalClient = SocialV1.SocialInternalClient(caller: identity)
                    let ids = try await internalClient.friendIds(
                        .init(userId: bob.id, appId: harness.appID), options: CallOptions(timeout: .seconds(10)))
                    #expect(ids.userIds == [alice.id])
                    let blocked = try await internalClient.isBlocked(.init(userId: alice.id, otherUserId: bob.id))
                    #expect(!blocked.blocked)
                    await #expect(throws: RPCError.self) {
                        _ = try await player.queryFriends(
                            .init(query: .init(listKey: "friends", limit: 1000)), options: asPlayer(alice))
                    }
                } catch {
                    Issue.record("call failed: \(error)")
                }
                connection.close()
                runtime.triggerShutdown()
                try await running.value
                clientGroup.shutdown()
            }
        }
    }
}
