import Foundation
import Push
import RaveMessages
import RavePostgres
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// Fan-out of one notification to many devices against a local HTTP/2 sink: how long the enqueue transaction
/// takes, and how many deliveries per second the worker completes.
///
/// `rave-bench push` runs it against `RAVE_DATABASE_URL` (a scratch database: it is migrated and filled) and the APNs
/// endpoint in `RAVE_PUSH_APNS_URL` (a sink that answers 200, such as Tests/PushTests/Fixtures/fake_provider.py),
/// prints a summary and writes `.bench/push-fanout.json`.
package enum FanoutBenchmark {
    static let recipients = 1000

    package static func run(environment: [String: String]) async -> Int32 {
        let logger = Logger(label: "push-bench")
        do {
            var reader = ConfigurationReader(environment: environment)
            let devices = try reader.integer("RAVE_PUSH_BENCH_DEVICES", default: 100_000, range: 1000...10_000_000)
            let databaseURL = try reader.string("RAVE_DATABASE_URL", default: "")
            let group = try EventLoopGroup(loopCount: 2)
            var poolConfiguration = PostgresPool.Configuration(connectionString: databaseURL)
            poolConfiguration.size = 16
            let pool = try PostgresPool(configuration: poolConfiguration, group: group)
            _ = try await Migrator(pool: pool, directory: PushMain.migrationsDirectory).migrate()
            let push = try PushInProcess(
                environment: environment, pool: pool, pollInterval: .milliseconds(10), logger: logger)
            guard push.deliversToAPNs else {
                print("rave-bench push: set RAVE_PUSH_APNS_KEY_FILE, _KEY_ID, _TEAM_ID, _TOPIC and _URL")
                pool.shutdown()
                return 64
            }
            let seed = RaveID.random().hex
            // The app id as the protocol writes ids: SendNotification refuses any other spelling.
            let appID = RaveID(high: 0x5eed_0000_0000_0005, low: 5).hex
            try await pool.query(
                """
                INSERT INTO device_tokens (token_id, app_id, user_id, platform, token, sandbox, consent_push,
                    consent_advertising, consent_night_advertising, option_foreground, option_badge, option_sound,
                    country, language, time_zone, registered_at)
                SELECT md5('t' || i || $1)::uuid, $4, md5('u' || (i % $2) || $1)::uuid, 1,
                    'bench-ok-' || $1 || '-' || i, false, true, true, true, false, true, true, 'US', 'en', 'UTC', now()
                FROM generate_series(1, $3::bigint) AS i
                """, [seed, recipients, devices, appID])
            let users = try await pool.query(
                "SELECT DISTINCT user_id FROM device_tokens WHERE app_id = $2 AND token LIKE $1",
                ["bench-ok-\(seed)-%", appID]
            ).map { try $0.decode(RaveID.self, at: 0).hex }
            let request = PushV1.SendNotificationRequest(
                appId: appID, userIds: users, notification: PushV1.Notification(title: "Bench", body: "fan-out"))
            let enqueueStart = ContinuousClock.now
            let sent = try await push.send(request)
            let enqueueSeconds = seconds(ContinuousClock.now - enqueueStart)
            let deliverStart = ContinuousClock.now
            var attempted = 0
            while attempted < Int(sent.queued) {
                let drained = try await push.drainDeliveries()
                if drained == 0 { break }
                attempted += drained
            }
            let deliverSeconds = seconds(ContinuousClock.now - deliverStart)
            let delivered = try await pool.query(
                "SELECT count(*) FROM deliveries WHERE notification_id = $1 AND state = 3",
                [RaveID(sent.notificationId)]
            )[0].decode(Int64.self, at: 0)
            let perSecond = Double(delivered) / deliverSeconds
            print(
                "push fan-out: \(sent.queued) deliveries enqueued in \(format(enqueueSeconds)) s; "
                    + "\(delivered) delivered in \(format(deliverSeconds)) s = \(Int(perSecond))/s "
                    + "(\(push.concurrency) in flight)")
            let json = """
                {"benchmark":"push-fanout","devices":\(devices),"recipients":\(users.count),\
                "enqueue_seconds":\(format(enqueueSeconds)),"delivered":\(delivered),\
                "deliver_seconds":\(format(deliverSeconds)),"deliveries_per_second":\(Int(perSecond)),\
                "concurrency":\(push.concurrency),"batch_size":\(push.batchSize),"targets":{"enqueue_seconds":5,\
                "deliveries_per_second":5000}}

                """
            try FileManager.default.createDirectory(atPath: ".bench", withIntermediateDirectories: true)
            try json.write(toFile: ".bench/push-fanout.json", atomically: true, encoding: .utf8)
            pool.shutdown()
            return 0
        } catch {
            logger.critical("benchmark failed", [("error", "\(error)")])
            return 1
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    private static func format(_ value: Double) -> String { String(format: "%.3f", value) }
}
