import BenchmarkSupport
import Foundation
import Gifts
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveTelemetry

/// Throughput of gifts' hot paths, called in-process against a real PostgreSQL: a send to 20 recipients (with its
/// one outbox event and idempotency record), a page of 25 pending gifts, and an accept (with its outbox event).
///
/// Users are `md5(i)` uuids; `listUsers` of them hold 40 pending gifts each for the page, and `acceptGifts` pending
/// gifts of a type of their own are seeded for the accepts, each accepted once.
struct GiftsBenchmark: Sendable {
    /// What to run; every field has a default fit for `make bench` on the project's 2-core machines.
    struct Parameters: Sendable {
        var users = 10_000
        var listUsers = 1_000
        var acceptGifts = 150_000
        /// Seconds per measured operation.
        var seconds: Double = 5
        /// Calls in flight at once.
        var concurrency = 32
    }

    let pool: PostgresPool
    let parameters: Parameters

    private static let userIDs = "SELECT md5(i::text)::uuid AS user_id FROM generate_series(0, $1 - 1) AS i"
    /// 40 gifts to each of the first `$3` users, from the user after them.
    private static let seedPending = """
        INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at)
        SELECT md5('list' || i || '.' || k)::uuid, $1, $2, md5(((i + 1) % $4)::text)::uuid, md5(i::text)::uuid,
            now() - k * interval '1 second', now() + interval '14 days'
        FROM generate_series(0, $3 - 1) AS i, generate_series(1, 40) AS k
        """
    private static let seedAcceptable = """
        INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at)
        SELECT md5('accept' || k)::uuid, $1, $2, md5(((k + 1) % $4)::text)::uuid, md5((k % $4)::text)::uuid,
            now() - interval '1 hour', now() + interval '14 days'
        FROM generate_series(0, $3 - 1) AS k
        """
    private static let acceptable = """
        SELECT id, recipient_id FROM gifts WHERE gift_type_id = $1 AND state = 0 ORDER BY id
        """

    /// Seeds, then measures the three operations one after another.
    func run() async throws -> [BenchmarkMeasurement] {
        let appID = RaveID.random()
        let ids = try await pool.query(PostgresQuery(Self.userIDs, [parameters.users])).map {
            try $0.decode(RaveID.self, column: "user_id")
        }
        let service = GiftsDependencies(
            pool: pool, directory: BenchmarkDirectory(users: Set(ids)),
            logger: Logger(label: "gifts-bench", level: .error))
        let life = try await service.createGiftType(GiftsV1.GiftType(key: "life", name: "Life"), appID: appID)
        let coin = try await service.createGiftType(GiftsV1.GiftType(key: "coin", name: "Coin"), appID: appID)
        try await pool.query(
            PostgresQuery(Self.seedPending, [appID, life, parameters.listUsers, parameters.users]))
        try await pool.query(
            PostgresQuery(Self.seedAcceptable, [appID, coin, parameters.acceptGifts, parameters.users]))
        try await pool.query(PostgresQuery("ANALYZE"))
        let acceptable = try await pool.query(PostgresQuery(Self.acceptable, [coin])).map {
            (
                gift: try $0.decode(RaveID.self, column: "id"),
                recipient: try $0.decode(RaveID.self, column: "recipient_id")
            )
        }

        // The pool's outbox wake-up runs as the event publisher runs it in production, so its NOTIFYs are measured.
        let wakeup = OutboxWakeup(pool: pool, logger: Logger(label: "gifts-bench", level: .error))
        async let wakeups: Void = wakeup.run()
        do {
            let measurements = try await measureOperations(
                service: service, appID: appID, ids: ids, acceptable: acceptable)
            await wakeup.shutdown()
            await wakeups
            return measurements
        } catch {
            await wakeup.shutdown()
            await wakeups
            throw error
        }
    }

    /// The three measured operations, one after another.
    private func measureOperations(
        service: GiftsDependencies, appID: RaveID, ids: [RaveID], acceptable: [(gift: RaveID, recipient: RaveID)]
    ) async throws -> [BenchmarkMeasurement] {
        let player = service.playerHandler
        let app = appID.hex
        let run = RaveID.random().hex.prefix(8)
        @Sendable func context(_ user: RaveID) -> RequestContext {
            Self.context(caller: Caller(userID: user.hex, appID: app, sessionID: "", scopes: ["player"]))
        }
        let users = ids
        let send = try await measure("send_to_20") { worker, iteration in
            let sender = users[Int.random(in: 0..<users.count)]
            var recipients: Set<RaveID> = []
            while recipients.count < 20 {
                let user = users[Int.random(in: 0..<users.count)]
                if user != sender { recipients.insert(user) }
            }
            _ = try await player.sendGifts(
                .init(
                    giftTypeKey: "life", recipientIds: recipients.map(\.hex),
                    idempotencyKey: "bench-\(run)-\(worker)-\(iteration)"),
                context: context(sender))
        }
        let listUsers = Array(users.prefix(parameters.listUsers))
        let page = try await measure("list_25_pending") { _, _ in
            let user = listUsers[Int.random(in: 0..<listUsers.count)]
            let listed = try await player.listGifts(.init(pageSize: 25), context: context(user))
            guard listed.gifts.count == 25 else { throw RPCError(.aborted, "a page held \(listed.gifts.count) gifts") }
        }
        let concurrency = parameters.concurrency
        let accept = try await measure("accept") { worker, iteration in
            // Worker w takes every concurrency-th gift, so no two calls accept the same one.
            let position = iteration * concurrency + worker
            guard position < acceptable.count else { throw RPCError.resourceExhausted("seed more acceptGifts") }
            let (gift, recipient) = acceptable[position]
            _ = try await player.acceptGift(.init(giftId: gift.hex), context: context(recipient))
        }
        return [send, page, accept]
    }

    /// Runs `operation` from `concurrency` workers for `seconds`.
    private func measure(
        _ name: String, _ operation: @escaping @Sendable (Int, Int) async throws -> Void
    ) async throws -> BenchmarkMeasurement {
        let start = Date().timeIntervalSince1970
        let measurement = await ClosedLoopLoad.measure(
            name, concurrency: parameters.concurrency, seconds: parameters.seconds, operation)
        // The window on stderr lets a profiler attribute CPU samples (of this process and the database's) to it.
        FileHandle.standardError.write(
            Data("rave-bench gifts: \(name) from \(start) to \(Date().timeIntervalSince1970) (unix seconds)\n".utf8))
        return measurement
    }

    static func context(caller: Caller?) -> RequestContext {
        RequestContext(
            requestID: "bench", method: "bench", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:0", certificateCommonName: nil),
            caller: caller, logger: Logger(label: "gifts-bench", level: .error))
    }
}

/// Calls per second and latency percentiles of one operation.
typealias BenchmarkMeasurement = LoadMeasurement
