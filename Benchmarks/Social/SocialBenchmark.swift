import BenchmarkSupport
import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTransport
import Social

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
        /// Measurement rounds over the one seeded graph; the summary reports each round.
        var rounds = 1
        /// Friend ids the FriendIds cache may hold (`RAVE_SOCIAL_FRIEND_CACHE_IDS`, as the service reads it).
        var friendCacheIDs = SocialConfiguration().friendCacheIDs
        /// Keeps a graph an earlier run seeded in the same database (`RAVE_BENCH_REUSE_SEED=1`): seeding 100,000
        /// users takes a quarter of an hour, so a large graph is seeded once and measured when the machine is quiet.
        var reuseSeed = false
    }

    /// Fixed, so a later run finds the lists of an earlier one (`reuseSeed`).
    static let publisherID = RaveID(high: 0x5eed_0000_0000_0001, low: 1)
    static let appID = RaveID(high: 0x5eed_0000_0000_0002, low: 2)

    let pool: PostgresPool
    let parameters: Parameters
    /// The loop the friend id cache listens on.
    let loop: EventLoop
    let logger: Logger

    /// Users $4 ..< $5 of $2, so a large seed goes in slices.
    private static let seedEdges = """
        INSERT INTO edges (list_id, owner_id, direction, peer_id, sort_name, created_at)
        SELECT $1, md5(i::text)::uuid, 0, md5(((i + s * k + $2) % $2)::text)::uuid, 'player ' || ((i + s * k + $2) % $2),
            now() - k * interval '1 second'
        FROM generate_series($4::int, $5::int - 1) AS i, generate_series(1, $3 / 2) AS k, (VALUES (1), (-1)) AS side (s)
        """
    /// Secondary indexes of `edges`: dropped while seeding and built afterwards, which is many times faster than
    /// updating them row by row at 100 million rows.
    private static let edgeIndexes = """
        SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'edges' AND indexname <> 'edges_pkey'
        """
    /// The primary key, dropped and added back like the secondary indexes.
    private static let primaryKey = """
        SELECT conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conrelid = 'edges'::regclass AND contype = 'p'
        """
    private static let seededOwners = "SELECT count(*) AS owners FROM edge_counts WHERE list_id = $1 AND direction = 0"
    private static let seedCounts = """
        INSERT INTO edge_counts (list_id, owner_id, direction, count)
        SELECT $1, md5(i::text)::uuid, 0, $3 FROM generate_series(0, $2 - 1) AS i
        """
    private static let userIDs = "SELECT md5(i::text)::uuid AS user_id, i FROM generate_series(0, $1 - 1) AS i"

    /// Seeds the graph, then measures the three operations one after another, `rounds` times.
    func run() async throws -> [BenchmarkMeasurement] {
        let publisherID = Self.publisherID
        let appID = Self.appID
        let users = parameters.users
        var profiles: [RaveID: DirectoryProfile] = [:]
        for row in try await pool.query(PostgresQuery(Self.userIDs, [users])) {
            let id = try row.decode(RaveID.self, column: "user_id")
            let index = try row.decode(Int.self, column: "i")
            profiles[id] = DirectoryProfile(userID: id, displayName: "Player \(index)")
        }
        let ids = Array(profiles.keys)
        let directory = BenchmarkDirectory(publisherID: publisherID, users: profiles)
        var configuration = SocialConfiguration()
        configuration.maxListMembers = max(5_000, parameters.friends + 1)
        configuration.friendCacheIDs = parameters.friendCacheIDs
        let service = SocialDependencies(
            pool: pool, directory: directory, configuration: configuration, loop: loop, logger: logger)
        let list = try await service.friendsListID("friends", appID: appID)
        let reused = parameters.reuseSeed ? try await isSeeded(list: list) : false
        if !reused { try await seed(list: list) }
        let cache = Task { try await service.runFriendIDCache() }
        defer { cache.cancel() }
        for _ in 0..<100 where !service.friendIDCacheIsListening { try await Task.sleep(for: .milliseconds(50)) }
        guard service.friendIDCacheIsListening else {
            throw PostgresError(.client, "the friend id cache never listened")
        }

        let player = service.playerHandler
        let internalHandlers = service.internalHandler
        let app = appID.hex
        let parameters = self.parameters
        @Sendable func context(_ user: RaveID) -> RequestContext {
            Self.context(caller: Caller(userID: user.hex, appID: app, sessionID: "", scopes: ["player"]))
        }
        let serviceContext = Self.context(caller: nil, service: true)
        // Steady state: every user's list read once (leaderboards keeps asking for the same players).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<parameters.concurrency {
                group.addTask {
                    for index in stride(from: worker, to: ids.count, by: parameters.concurrency) {
                        _ = try await internalHandlers.friendIds(
                            .init(userId: ids[index].hex, appId: app), context: serviceContext)
                    }
                }
            }
            try await group.waitForAll()
        }
        logger.notice("friend id cache warmed", [("ids", "\(service.friendIDCacheStoredIDs)")])
        var measurements: [BenchmarkMeasurement] = []
        for _ in 0..<max(1, parameters.rounds) {
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
            let friendIDs = try await measure("friend_ids_\(parameters.friends)") { _, _ in
                let user = ids[Int.random(in: 0..<ids.count)]
                _ = try await internalHandlers.friendIds(.init(userId: user.hex, appId: app), context: serviceContext)
            }
            // Each follow_unfollow call is two writes; report writes per second, the unit of the target (≥ 5,000 writes/s).
            var writes = follows
            writes.calls *= 2
            measurements += [page, writes, friendIDs]
        }
        await service.shutdownFriendIDCache()
        _ = try await cache.value
        return measurements
    }

    /// Whether `list` already holds this run's graph (a reused database).
    private func isSeeded(list: Int64) async throws -> Bool {
        let rows = try await pool.query(PostgresQuery(Self.seededOwners, [list]))
        return try rows.first?.decode(Int.self, column: "owners") == parameters.users
    }

    /// Writes the ring of friendships and its counts, then vacuums so pages are index-only scans.
    ///
    /// At 100 million rows the insert is what takes the time, so `edges` has no index while it runs (the primary
    /// key and the secondary indexes are built afterwards, each by one sort), two slices are written at once (one
    /// per core), and a superuser skips the foreign-key trigger on `list_id` (the one list row exists).
    private func seed(list: Int64) async throws {
        let users = parameters.users
        let indexes = try await pool.query(PostgresQuery(Self.edgeIndexes)).map {
            (try $0.decode(String.self, column: "indexname"), try $0.decode(String.self, column: "indexdef"))
        }
        let primaryKey = try await pool.query(PostgresQuery(Self.primaryKey)).first.map {
            (try $0.decode(String.self, column: "conname"), try $0.decode(String.self, column: "definition"))
        }
        for (name, _) in indexes { try await pool.query(PostgresQuery("DROP INDEX \(name)")) }
        if let (name, _) = primaryKey {
            try await pool.query(PostgresQuery("ALTER TABLE edges DROP CONSTRAINT \(name)"))
        }
        let superuser =
            try await pool.query(PostgresQuery("SELECT usesuper FROM pg_user WHERE usename = current_user"))
            .first?.decode(Bool.self, column: "usesuper") ?? false
        let slice = max(1, 5_000_000 / max(1, parameters.friends))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<2 {
                group.addTask {
                    for start in stride(from: worker * slice, to: users, by: 2 * slice) {
                        let end = min(users, start + slice)
                        try await pool.transaction { transaction in
                            if superuser {
                                try await transaction.query(
                                    PostgresQuery("SET LOCAL session_replication_role = replica"))
                            }
                            try await transaction.query(
                                PostgresQuery(Self.seedEdges, [list, users, parameters.friends, start, end]))
                        }
                        if users > slice { logger.notice("seeded", [("users", "\(end)"), ("of", "\(users)")]) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await pool.query(PostgresQuery(Self.seedCounts, [list, users, parameters.friends]))
        let definitions =
            (primaryKey.map { [($0.0, "ALTER TABLE edges ADD CONSTRAINT \($0.0) \($0.1)")] } ?? []) + indexes
        for (name, definition) in definitions {
            try await pool.transaction { transaction in
                try await transaction.query(PostgresQuery("SET LOCAL maintenance_work_mem = '1GB'"))
                try await transaction.query(PostgresQuery(definition))
            }
            if users > slice { logger.notice("indexed", [("index", name)]) }
        }
        try await pool.query(PostgresQuery("VACUUM ANALYZE"))
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
