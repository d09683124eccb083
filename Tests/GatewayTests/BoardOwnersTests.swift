import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Testing

@testable import Gateway

/// The board-owner cache, the `leaderboard_key` scan and the owner's preference in pool selection (pure).
@Suite("Gateway board owners")
struct BoardOwnersTests {
    @Test func theKeyIsReadFromFieldOneWithoutDecoding() {
        let submit = LeaderboardsV1.SubmitScoreRequest(leaderboardKey: "weekly-ü", score: 12).protobufBytes()
        #expect(BoardOwners.leaderboardKey(in: submit) == "weekly-ü")
        // Field 1 after other fields of every wire type: varint 2, fixed64 3, fixed32 4, bytes 5.
        let later: [UInt8] = [
            0x10, 0x96, 0x01, 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4, 0x2A, 0x01, 0x00, 0x0A, 0x02, 0x62, 0x31,
        ]
        #expect(BoardOwners.leaderboardKey(in: later) == "b1")
        #expect(BoardOwners.leaderboardKey(in: []) == nil)
        #expect(BoardOwners.leaderboardKey(in: [0x10, 0x05]) == nil)
        #expect(BoardOwners.leaderboardKey(in: [0x0A, 0x09, 0x61]) == nil, "a key longer than the message")
        #expect(BoardOwners.leaderboardKey(in: [0x0A, 0x01, 0xFF]) == nil, "not UTF-8")
        #expect(BoardOwners.leaderboardKey(in: [0x08, 0x01]) == nil, "field 1 as a varint")
    }

    @Test func listingsAndRefusalsFillTheCache() throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let owners = BoardOwners(pool: pool(["127.0.0.1:7503", "127.0.0.1:7513"], group: group), logger: quiet)
        let weekly = BoardOwners.Board(appID: "app-1", key: "weekly")
        owners.replace(
            with: LeaderboardsV1.ListBoardOwnersResponse(owners: [
                LeaderboardsV1.BoardOwner(
                    appId: "app-1", leaderboardKey: "weekly", address: "127.0.0.1:7513", expiresUnixMs: 2000),
                LeaderboardsV1.BoardOwner(
                    appId: "app-1", leaderboardKey: "broken", address: "no port", expiresUnixMs: 2000),
            ]))
        let owner = SocketAddress(host: "127.0.0.1", port: 7513)
        #expect(owners.owner(of: weekly, nowUnixMilliseconds: 1000) == owner)
        #expect(owners.owner(of: weekly, nowUnixMilliseconds: 2000) == nil, "an expired lease")
        #expect(owners.owner(of: BoardOwners.Board(appID: "app-2", key: "weekly"), nowUnixMilliseconds: 1000) == nil)
        #expect(owners.owner(of: BoardOwners.Board(appID: "app-1", key: "broken"), nowUnixMilliseconds: 1000) == nil)

        let refusal = RPCError(
            .unavailable, "served by 127.0.0.1:7503",
            details: LeaderboardsV1.NotBoardOwner(appId: "app-1", leaderboardKey: "daily", address: "127.0.0.1:7503")
                .protobufBytes(),
            notProcessed: true)
        let named = owners.ownerNamed(by: refusal, nowUnixMilliseconds: 1000)
        #expect(named == SocketAddress(host: "127.0.0.1", port: 7503))
        #expect(owners.owner(of: BoardOwners.Board(appID: "app-1", key: "daily"), nowUnixMilliseconds: 1001) == named)
        #expect(owners.ownerNamed(by: RPCError(.unavailable, "down", notProcessed: true)) == nil)
        #expect(owners.ownerNamed(by: RPCError(.unavailable, "processed", details: refusal.details)) == nil)
    }

    @Test func theOwnerIsPreferredWhileItIsHealthy() throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let pool = pool(["127.0.0.1:7503", "127.0.0.1:7513", "127.0.0.1:7523"], group: group)
        let owner = SocketAddress(host: "127.0.0.1", port: 7513)
        for _ in 0..<5 { #expect(pool.choose(preferring: owner)?.index == 1) }
        #expect(pool.choose(preferring: owner, excluding: [1])?.index != 1)
        pool.backends[1].markHealthy(false)
        #expect(pool.choose(preferring: owner)?.index != 1)
        #expect(pool.choose(preferring: SocketAddress(host: "127.0.0.1", port: 9999)) != nil)
    }

    private var quiet: Logger { Logger(label: "test", level: .error) }

    private func pool(_ addresses: [String], group: EventLoopGroup) -> BackendPool {
        BackendPool(
            service: "leaderboards",
            backends: addresses.compactMap(SocketAddress.init(parsing:)).map { address in
                Backend(
                    address: address, client: RPCClient(host: address.host, port: address.port, tls: nil, group: group))
            })
    }
}
