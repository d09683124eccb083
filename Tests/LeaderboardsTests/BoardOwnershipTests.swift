import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Leaderboards

@Suite("Board ownership across instances")
struct BoardOwnershipTests {
    @Test("the first instance to serve a board owns it; the other refuses, naming it, and lists it as owner")
    func firstInstanceOwnsTheBoardAndTheOtherRefuses() async throws {
        try await LeaseCluster.with { cluster in
            let first = try await cluster.start()
            let second = try await cluster.start()
            let app = uniqueApp()
            let player = RaveID.random()
            try await first.define("points", app: app)
            let submitted = try await first.submit(42, player: player, board: "points", app: app)
            #expect(submitted.globalPosition == 1)
            await #expect {
                _ = try await second.submit(43, player: player, board: "points", app: app)
            } throws: { error in
                guard let error = error as? RPCError, error.code == .unavailable, error.notProcessed,
                    let owner = try? LeaderboardsV1.NotBoardOwner(protobufBytes: error.details)
                else { return false }
                return owner.appId == app && owner.leaderboardKey == "points" && owner.address == first.address
            }
            let owners = try await LeaderboardsV1.LeaderboardsInternalClient(caller: second.connection)
                .listBoardOwners(LeaderboardsV1.ListBoardOwnersRequest(), options: cluster.options())
            let listed = owners.owners.filter { $0.appId == app }
            #expect(listed.map(\.leaderboardKey) == ["points"])
            #expect(listed.map(\.address) == [first.address])
            // Listing an app's boards spans every board: the other instance reads this one from the table.
            let listing = try await LeaderboardsV1.LeaderboardsClient(caller: second.connection).listLeaderboards(
                LeaderboardsV1.ListLeaderboardsRequest(), options: cluster.options(user: player.hex, app: app))
            #expect(listing.leaderboards.map { $0.standing?.globalPosition } == [1])
            #expect(listing.leaderboards.map { $0.standing?.highScore } == [42])
            #expect(listing.leaderboards.map(\.entryCount) == [1])
        }
    }

    @Test("when the owner drains, the other instance takes the board over with the same ranks")
    func successorTakesOverAfterDrain() async throws {
        try await LeaseCluster.with { cluster in
            let first = try await cluster.start()
            let second = try await cluster.start()
            let app = uniqueApp()
            let players = (0..<5).map { _ in RaveID.random() }
            try await first.define("points", app: app)
            for (offset, player) in players.enumerated() {
                _ = try await first.submit(Int64(100 + offset), player: player, board: "points", app: app)
            }
            let before = try await first.ranks(board: "points", app: app)
            await first.stop()
            let after = try await second.ranks(board: "points", app: app)
            #expect(after == before)
            #expect(after.map(\.player) == players.reversed().map(\.hex))
            let submitted = try await second.submit(1000, player: players[0], board: "points", app: app)
            #expect(submitted.globalPosition == 1)
            let owners = try await LeaderboardsV1.LeaderboardsInternalClient(caller: second.connection)
                .listBoardOwners(LeaderboardsV1.ListBoardOwnersRequest(), options: cluster.options())
            #expect(owners.owners.filter { $0.appId == app }.map(\.address) == [second.address])
        }
    }

    @Test("an unexpired lease of another instance is refused; once expired, it is taken and the board loaded")
    func expiredLeaseIsTaken() async throws {
        try await LeaseCluster.with { cluster in
            let instance = try await cluster.start()
            let app = uniqueApp()
            let player = RaveID.random()
            // A board another instance (10.9.9.9) defined, scored and holds, written as it would have.
            _ = try await cluster.pool.query(
                PostgresQuery(
                    """
                    WITH board AS (INSERT INTO leaderboards (app_id, key, name, ascending)
                                   VALUES ($1, 'points', 'Points', false) RETURNING board_id)
                    INSERT INTO scores (board_id, version, user_id, score, achieved_at)
                    SELECT board_id, 1, $2, 7, now() FROM board
                    """, [app, player]))
            let claim = """
                INSERT INTO board_leases (app_id, leaderboard_key, owner_address, instance_id, expires_at)
                VALUES ($1, 'points', '10.9.9.9:7503', $2, now() + $3::interval)
                ON CONFLICT (app_id, leaderboard_key) DO UPDATE SET expires_at = EXCLUDED.expires_at
                """
            _ = try await cluster.pool.query(PostgresQuery(claim, [app, RaveID.random(), "1 hour"]))
            await #expect {
                _ = try await instance.ranks(board: "points", app: app)
            } throws: { error in
                guard let error = error as? RPCError, error.code == .unavailable, error.notProcessed else {
                    return false
                }
                return (try? LeaderboardsV1.NotBoardOwner(protobufBytes: error.details))?.address == "10.9.9.9:7503"
            }
            // Its lease expired (it crashed): the next call takes the board and loads it from the table.
            _ = try await cluster.pool.query(PostgresQuery(claim, [app, RaveID.random(), "-1 second"]))
            try await Task.sleep(for: BoardOwnership.ownerMemory)
            #expect(try await instance.ranks(board: "points", app: app).map(\.player) == [player.hex])
            let rows = try await cluster.pool.query(
                PostgresQuery("SELECT owner_address FROM board_leases WHERE app_id = $1", [app]))
            #expect(try rows.map { try $0.decode(String.self, at: 0) } == [instance.address])
        }
    }

    @Test("start-up renews the leases after loading the indexes, so serving begins on fresh leases")
    func startUpRenewsLeasesAfterLoading() async throws {
        try await TestDatabase.withPool { pool in
            let engine = LeaderboardEngine(pool: pool)
            let board = try await engine.defineBoard(
                BoardDefinition(appID: uniqueApp(), message: LeaderboardsV1.LeaderboardDefinition(key: "k", name: "K")))
            let ownership = BoardOwnership(
                pool: pool, address: "10.0.0.3:7503", leaseDuration: .seconds(30), evict: { _ in })
            let dependencies = LeaderboardsDependencies(engine: engine, ownership: ownership)
            try await ownership.acquire(board)
            let taken = try #require(ownership.expiry(of: board))
            try await dependencies.loadIndexes(logger: Logger(label: "test"))
            let renewed = try #require(ownership.expiry(of: board))
            #expect(renewed > taken)
        }
    }

    @Test("a lease taken over after expiry evicts the index at the old owner's next renewal")
    func lostLeaseEvictsTheIndex() async throws {
        try await TestDatabase.withPool { pool in
            let engine = LeaderboardEngine(pool: pool)
            let board = try await engine.defineBoard(
                BoardDefinition(appID: uniqueApp(), message: LeaderboardsV1.LeaderboardDefinition(key: "k", name: "K")))
            let evicted = EvictionLog()
            let old = BoardOwnership(
                pool: pool, address: "10.0.0.1:7503", leaseDuration: .seconds(30), evict: { evicted.append($0) })
            let successor = BoardOwnership(
                pool: pool, address: "10.0.0.2:7503", leaseDuration: .seconds(30), evict: { _ in })
            try await old.acquire(board)
            try await old.renewAll()
            // Taking a board evicts any stale local index once; a renewal that finds the lease keeps it.
            #expect(old.holds(board) && evicted.boards == [board.boardID])
            _ = try await pool.query(PostgresQuery("UPDATE board_leases SET expires_at = now() - interval '1 second'"))
            try await successor.acquire(board)
            try await old.renewAll()
            #expect(!old.holds(board))
            #expect(evicted.boards == [board.boardID, board.boardID])
            #expect(successor.holds(board))
        }
    }
}

extension BoardOwnershipTests {
    @Test("without renewals an owner stops serving at its local expiry, and resumes its index if nobody took over")
    func lapsedLeaseStopsServingUntilRetaken() async throws {
        try await TestDatabase.withPool { pool in
            let engine = LeaderboardEngine(pool: pool)
            let board = try await engine.defineBoard(
                BoardDefinition(appID: uniqueApp(), message: LeaderboardsV1.LeaderboardDefinition(key: "k", name: "K")))
            let evicted = EvictionLog()
            let owner = BoardOwnership(
                pool: pool, address: "10.0.0.1:7503", leaseDuration: .seconds(1), evict: { evicted.append($0) })
            try await owner.acquire(board)
            #expect(owner.holds(board))
            try await Task.sleep(for: .milliseconds(1100))
            #expect(!owner.holds(board))
            // Still its own row (nobody took it): the index built under the earlier lease stays.
            try await owner.acquire(board)
            #expect(owner.holds(board))
            #expect(evicted.boards == [board.boardID])
            let owners = try await owner.owners()
            #expect(owners.filter { $0.appID == board.appID }.map(\.ownerAddress) == ["10.0.0.1:7503"])
            try await owner.releaseAll()
            #expect(!owner.holds(board))
            #expect(try await owner.owners().filter { $0.appID == board.appID }.isEmpty)
        }
    }
}

/// Boards whose indexes an ownership evicted.
final class EvictionLog: Sendable {
    private let log = Mutex<[Int64]>([])

    func append(_ boardID: Int64) { log.withLock { $0.append(boardID) } }
    var boards: [Int64] { log.withLock { $0 } }
}
