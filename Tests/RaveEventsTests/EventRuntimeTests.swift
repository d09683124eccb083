import RaveEvents
import RaveOutbox
import RavePostgres
import RaveRuntime
import RaveTelemetry
import Testing

@Suite("Events through the service runtime")
struct EventRuntimeTests {
    /// Two processes as `make run` starts them: a publisher configured by RAVE_EVENT_SINKS and a sink serving
    /// EventSink next to its other services, each with its own certificate and database; named as a real
    /// publisher and sink (identity and gifts), since the runtime applies the project's trust model.
    @Test func aPublisherConfiguredFromTheEnvironmentReachesASinkService() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase(migrated: false) { publisherPool, publisherURL in
                try await EventsHarness.withDatabase(migrated: false) { sinkPool, sinkURL in
                    let common = [
                        "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                        "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "critical", "RAVE_SHUTDOWN_GRACE": "1s",
                        "RAVE_DB_POOL_SIZE": "2",
                    ]
                    let sinkRuntime = try await ServiceRuntime.start(
                        name: "gifts", environment: common.merging(["RAVE_DATABASE_URL": sinkURL]) { $1 },
                        migrations: .list([
                            Migration(version: 1, name: "outbox", sql: Outbox.migration),
                            Migration(version: 2, name: "received", sql: EventsHarness.receivedTable),
                        ])
                    ) { context in
                        [EventsHarness.recordingSink(pool: context.pool)]
                    }
                    let publisherRuntime = try await ServiceRuntime.start(
                        name: "identity",
                        environment: common.merging([
                            "RAVE_DATABASE_URL": publisherURL,
                            "RAVE_EVENT_SINKS": "gifts=127.0.0.1:\(sinkRuntime.rpcPort)",
                        ]) { $1 },
                        migrations: .list([Migration(version: 1, name: "outbox", sql: Outbox.migration)])
                    ) { context in
                        context.addBackgroundService(
                            try EventPublisher.forService(context: context, source: "identity"))
                        return []
                    }
                    let sinkRunning = Task { try await sinkRuntime.run() }
                    let publisherRunning = Task { try await publisherRuntime.run() }

                    let eventID = try await publisherPool.transaction { transaction in
                        try await EventOutbox.publish(
                            in: transaction, topic: "test.runtime", key: RaveID.random().hex, payload: [42])
                    }
                    let received = try await EventsHarness.eventually {
                        try await EventsHarness.count("received_events", in: sinkPool) == 1
                    }
                    publisherRuntime.triggerShutdown()
                    try await publisherRunning.value
                    sinkRuntime.triggerShutdown()
                    try await sinkRunning.value

                    #expect(received)
                    let rows = try await sinkPool.query("SELECT event_id, source FROM received_events")
                    #expect(try rows.first?.decode(String.self, column: "event_id") == eventID.hex)
                    #expect(try rows.first?.decode(String.self, column: "source") == "identity")
                }
            }
        }
    }
}
