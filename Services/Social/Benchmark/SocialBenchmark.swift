import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry

/// Throughput of social's hot paths, called in-process against a real PostgreSQL: a page of 25 friends ordered by
/// display name, follow + unfollow, and FriendIds of every friend.
///
/// The graph is seeded in SQL: `users` players, each with `friends` friends in the app's default friends list (a
/// ring: user i is friends with the `friends / 2` users on either side), each named "Player <i>".
struct SocialBenchmark: Sendable {
    /// What to run; every field has a default fit for `make bench` on the project's 2-core machines.
    struct Parameters: Sendable {
        var users = 10_000
        /// Friends per user (even).
        var friends = 1_000
        /// Seconds per measured operation.
        var seconds: Double = 5
        /// Calls in flight at once.
        var concurrency = 32
    }

    let pool: PostgresPool
    let parameters: Parameters

    private static let seedEdges = """
        INSERT INTO edges (list_id, owner_id, direction, peer_id, sort_name, created_at)
        SELECT $1, md5(i::text)::uuid, 0, md5(((i + s * k + $2) % $2)::text)::uuid, 'player ' || ((i + s * k + $2) % $2),
            now() - k * interval '1 second'
        FROM generate_series(0, $2 - 1) AS i, generate_series(1, $3 / 2) AS k, (VALUES (1), (-1)) AS side (s)
        """
    private static let seedCounts = """
        INSERT INTO edge_counts (list_id, owner_id, direction, count)
        SELECT $1, md5(i::text)::uuid, 0, $3 FROM generate_series(0, $2 - 1) AS i
        """
    private static let userIDs = "SELECT md5(i::text)::uuid AS user_id, i FROM generate_series(0, $1 - 1) AS i"

    /// Seeds the graph, then measures the three operations one after another.
    func run() async throws -> [BenchmarkMeasurement] {
        let publisherID = RaveID.random()
        let appID = RaveID.random()
        let users = parameters.users
        var profiles: [RaveID: DirectoryProfile] = [:]
        for row in try await pool.query(PostgresQuery(Self.userIDs, [users])) {
            let id = try row.decode(RaveID.self, column: "user_id")
            let index = try row.decode(Int.self, column: "i")
            profiles[id] = DirectoryProfile(userID: id, displayName: "Player \(index)", pictureURL: "")
        }
        let ids = Array(profiles.keys)
        let directory = BenchmarkDirectory(publisherID: publisherID, users: profiles)
        var configuration = SocialConfiguration()
        configuration.maxListMembers = max(5_000, parameters.friends + 1)
        let service = SocialService(pool: pool, directory: directory, configuration: configuration)
        let list = try await service.lists.resolve("friends", appID: appID, kind: .friends)
        try await pool.query(PostgresQuery(Self.seedEdges, [list.id, users, parameters.friends]))
        try await pool.query(PostgresQuery(Self.seedCounts, [list.id, users, parameters.friends]))
        try await pool.query(PostgresQuery("ANALYZE"))

        let player = PlayerHandlers(service: service)
        let internalHandlers = InternalHandlers(service: service)
        let app = appID.hex
        @Sendable func context(_ user: RaveID) -> RequestContext {
            Self.context(caller: Caller(userID: user.hex, appID: app, sessionID: "", scopes: ["player"]))
        }
        let page = try await measure("query_friends_by_name_25") { _, _ in
            let user = ids[Int.random(in: 0..<ids.count)]
            _ = try await player.queryFriends(
                .init(query: .init(listKey: "friends", limit: 25)), context: context(user))
        }
        // Each worker follows from its own user, so no two workers race for the same pair.
        let follows = try await measure("follow_unfollow") { worker, iteration in
            let follower = ids[worker % ids.count]
            let followee = ids[(worker + 1 + iteration % (ids.count - 1)) % ids.count]
            guard follower != followee else { return }
            let target = SocialV1.UserReference(key: .userId(followee.hex))
            _ = try await player.follow(.init(listKey: "followers", target: target), context: context(follower))
            _ = try await player.unfollow(
                .init(listKey: "followers", userId: followee.hex), context: context(follower))
        }
        let serviceContext = Self.context(caller: nil, service: true)
        let friendIDs = try await measure("friend_ids_\(parameters.friends)") { _, _ in
            let user = ids[Int.random(in: 0..<ids.count)]
            _ = try await internalHandlers.friendIds(.init(userId: user.hex, appId: app), context: serviceContext)
        }
        // Each follow_unfollow call is two writes; report writes per second like the target.
        var writes = follows
        writes.calls *= 2
        return [page, writes, friendIDs]
    }

    /// Runs `operation` from `concurrency` workers for `seconds`.
    private func measure(
        _ name: String, _ operation: @escaping @Sendable (Int, Int) async throws -> Void
    ) async throws -> BenchmarkMeasurement {
        await ClosedLoopLoad.measure(
            name, concurrency: parameters.concurrency, seconds: parameters.seconds, operation)
    }

    static func context(caller: Caller?, service: Bool = false) -> RequestContext {
        RequestContext(
            requestID: "bench", method: "bench", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:0", certificateCommonName: service ? "bench" : nil),
            caller: caller, logger: Logger(label: "social-bench", level: .error))
    }
}

/// Calls per second and latency percentiles of one operation.
typealias BenchmarkMeasurement = LoadMeasurement
