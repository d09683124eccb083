import RaveEvents
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@Suite("Event delivery over mTLS")
struct EventDeliveryTests {
    /// Publisher and sink each on a database of their own, like two services.
    @Test func publishedEventsReachTheSinkOnceWithTheirEnvelope() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { publisherPool in
                try await EventsHarness.withDatabase { sinkPool in
                    let server = try EventsHarness.startSink(
                        EventsHarness.recordingSink(pool: sinkPool), certificates: certificates)
                    let user = RaveID.random().hex
                    let published = try await publisherPool.transaction { transaction in
                        [
                            try await EventOutbox.publish(
                                in: transaction, topic: "test.first", key: user, payload: [1, 2, 3]),
                            try await EventOutbox.publish(
                                in: transaction, topic: "other.ignored", key: user, payload: [4]),
                            try await EventOutbox.publish(
                                in: transaction, topic: "test.second", key: user, payload: []),
                        ]
                    }
                    let sinks = EventSinks(
                        addresses: [EventSinkAddress(name: "sink", host: "127.0.0.1", port: server.localPort)],
                        source: "publisher", tls: try EventsHarness.clientTLS(certificates), group: EventsHarness.group,
                        logger: EventsHarness.quiet)
                    let publisher = EventsHarness.publisher(pool: publisherPool, sinks: sinks)
                    let running = Task { try await publisher.run() }
                    let drained = try await EventsHarness.eventually { try await publisher.backlog().pending == 0 }
                    await publisher.shutdown()
                    try await running.value
                    await server.shutdown()

                    #expect(drained)
                    let rows = try await sinkPool.query(
                        "SELECT event_id, topic, key, payload, source FROM received_events ORDER BY topic")
                    #expect(
                        try rows.map { try $0.decode(String.self, column: "event_id") }
                            == [published[0].hex, published[2].hex])
                    #expect(try rows.map { try $0.decode([UInt8].self, column: "payload") } == [[1, 2, 3], []])
                    #expect(try rows.allSatisfy { try $0.decode(String.self, column: "key") == user })
                    #expect(try rows.allSatisfy { try $0.decode(String.self, column: "source") == "publisher" })
                    // The ignored topic left no processed mark behind.
                    #expect(try await EventsHarness.count("processed_events", in: sinkPool) == 2)
                }
            }
        }
    }

    @Test func aRolledBackTransactionPublishesNothing() async throws {
        try await EventsHarness.withDatabase { pool in
            struct Abandon: Error {}
            await #expect(throws: Abandon.self) {
                try await pool.transaction { transaction in
                    try await EventOutbox.publish(
                        in: transaction, topic: "test.rolled_back", key: RaveID.random().hex, payload: [9])
                    throw Abandon()
                }
            }
            let remaining = try await EventsHarness.count("outbox_events", in: pool)
            #expect(remaining == 0)
        }
    }

    @Test func aRedeliveredEventIsHandledOnce() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { pool in
                let server = try EventsHarness.startSink(
                    EventsHarness.recordingSink(pool: pool), certificates: certificates)
                let connection = RPCClient(
                    host: "127.0.0.1", port: server.localPort, tls: try EventsHarness.clientTLS(certificates),
                    group: EventsHarness.group, logger: EventsHarness.quiet)
                let client = EventsV1.EventSinkClient(caller: connection)
                let event = EventsV1.Event(
                    eventId: RaveID.random().hex, topic: "test.once", key: "k", payload: [7], source: "publisher")
                let ignored = EventsV1.Event(
                    eventId: RaveID.random().hex, topic: "elsewhere.x", key: "k", source: "publisher")
                let first = try await client.deliverEvents(.init(events: [event, ignored]))
                let second = try await client.deliverEvents(.init(events: [event, ignored]))
                connection.close()
                await server.shutdown()

                #expect(first.handled == 1)
                #expect(second.handled == 0)
                #expect(try await EventsHarness.count("received_events", in: pool) == 1)
            }
        }
    }

    /// A sink forgets processed ids older than their retention as deliveries come, a batch per delivery while a
    /// backlog lasts, so `processed_events` does not grow forever in a service that only receives.
    @Test func deliveriesForgetProcessedIdsOlderThanTheRetention() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { pool in
                let backlog = ProcessedEvents.pruneBatchSize + 10
                try await pool.query(
                    """
                    INSERT INTO processed_events
                    SELECT gen_random_uuid(), now() - interval '8 days' FROM generate_series(1, \(backlog))
                    """)
                let server = try EventsHarness.startSink(
                    EventsHarness.recordingSink(pool: pool), certificates: certificates)
                let connection = RPCClient(
                    host: "127.0.0.1", port: server.localPort, tls: try EventsHarness.clientTLS(certificates),
                    group: EventsHarness.group, logger: EventsHarness.quiet)
                let client = EventsV1.EventSinkClient(caller: connection)
                for _ in 0..<2 {
                    let event = EventsV1.Event(
                        eventId: RaveID.random().hex, topic: "test.once", key: "k", payload: [7], source: "publisher")
                    _ = try await client.deliverEvents(.init(events: [event]))
                }
                connection.close()
                await server.shutdown()
                // Both new ids are remembered; every old one is gone, over two deliveries.
                #expect(try await EventsHarness.count("processed_events", in: pool) == 2)
            }
        }
    }

    @Test func aSinkThatIsDownGetsTheEventWhenItComesBack() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { publisherPool in
                try await EventsHarness.withDatabase { sinkPool in
                    // A port nothing listens on while the publisher tries, below the ephemeral range so no outgoing
                    // connection takes it meanwhile.
                    let port = try LoopbackPort.unused()
                    try await publisherPool.transaction { transaction in
                        try await EventOutbox.publish(
                            in: transaction, topic: "test.delayed", key: RaveID.random().hex, payload: [1])
                    }
                    let sinks = EventSinks(
                        addresses: [EventSinkAddress(name: "sink", host: "127.0.0.1", port: port)], source: "publisher",
                        tls: try EventsHarness.clientTLS(certificates), group: EventsHarness.group,
                        callTimeout: .seconds(2), logger: EventsHarness.quiet)
                    let publisher = EventsHarness.publisher(pool: publisherPool, sinks: sinks)
                    let running = Task { try await publisher.run() }
                    let failedOnce = try await EventsHarness.eventually {
                        let rows = try await publisherPool.query(
                            "SELECT count(*) AS n FROM outbox_events WHERE attempts > 0 AND last_error IS NOT NULL")
                        return try rows.first?.decode(Int64.self, column: "n") == 1
                    }
                    let server = try EventsHarness.startSink(
                        EventsHarness.recordingSink(pool: sinkPool), certificates: certificates, port: port)
                    let delivered = try await EventsHarness.eventually {
                        try await EventsHarness.count("received_events", in: sinkPool) == 1
                    }
                    await publisher.shutdown()
                    try await running.value
                    await server.shutdown()

                    #expect(failedOnce)
                    #expect(delivered)
                    #expect(try await publisher.backlog().pending == 0)
                }
            }
        }
    }

    /// Two sinks, one failing its first handlings: the event is retried for both and each records it once.
    @Test func everySinkMustAcknowledgeAndDuplicatesAreAbsorbed() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { publisherPool in
                try await EventsHarness.withDatabase { steadyPool in
                    try await EventsHarness.withDatabase { flakyPool in
                        let steady = try EventsHarness.startSink(
                            EventsHarness.recordingSink(pool: steadyPool), certificates: certificates)
                        let flaky = try EventsHarness.startSink(
                            EventsHarness.recordingSink(pool: flakyPool, failures: FailureBudget(2)),
                            certificates: certificates)
                        try await publisherPool.transaction { transaction in
                            try await EventOutbox.publish(
                                in: transaction, topic: "test.fanout", key: RaveID.random().hex, payload: [5])
                        }
                        let sinks = EventSinks(
                            addresses: [
                                EventSinkAddress(name: "steady", host: "127.0.0.1", port: steady.localPort),
                                EventSinkAddress(name: "flaky", host: "127.0.0.1", port: flaky.localPort),
                            ], source: "publisher", tls: try EventsHarness.clientTLS(certificates),
                            group: EventsHarness.group, logger: EventsHarness.quiet)
                        let publisher = EventsHarness.publisher(pool: publisherPool, sinks: sinks)
                        let running = Task { try await publisher.run() }
                        let drained = try await EventsHarness.eventually {
                            try await publisher.backlog().pending == 0
                        }
                        await publisher.shutdown()
                        try await running.value
                        await steady.shutdown()
                        await flaky.shutdown()

                        #expect(drained)
                        let attempts = try await publisherPool.query("SELECT attempts FROM outbox_events")
                        #expect(try attempts.first?.decode(Int32.self, column: "attempts") == 3)
                        #expect(try await EventsHarness.count("received_events", in: steadyPool) == 1)
                        #expect(try await EventsHarness.count("received_events", in: flakyPool) == 1)
                    }
                }
            }
        }
    }

    /// Only the publishers the sink's policy names reach it, and each only with its own events.
    @Test func onlyPublishersDeliverAndOnlyTheirOwnEvents() async throws {
        try await EventsHarness.withCertificates { certificates in
            try await EventsHarness.withDatabase { pool in
                let server = try EventsHarness.startSink(
                    EventsHarness.recordingSink(pool: pool), certificates: certificates)
                defer { Task { await server.shutdown() } }
                func deliver(as name: String, source: String) async -> StatusCode {
                    let connection = RPCClient(
                        host: "127.0.0.1", port: server.localPort,
                        tls: try! EventsHarness.clientTLS(certificates, name: name), group: EventsHarness.group,
                        logger: EventsHarness.quiet)
                    defer { connection.close() }
                    let event = EventsV1.Event(eventId: RaveID.random().hex, topic: "test.x", key: "k", source: source)
                    do {
                        _ = try await EventsV1.EventSinkClient(caller: connection).deliverEvents(.init(events: [event]))
                        return .ok
                    } catch {
                        return error.code
                    }
                }
                // The sink's own certificate is a service, but not a publisher of this sink.
                #expect(await deliver(as: "sink", source: "sink") == .permissionDenied)
                // A publisher cannot pass its events off as another service's.
                #expect(await deliver(as: "publisher", source: "identity") == .permissionDenied)
                #expect(try await EventsHarness.count("processed_events", in: pool) == 0)
                #expect(await deliver(as: "publisher", source: "publisher") == .ok)
                #expect(try await EventsHarness.count("processed_events", in: pool) == 1)
            }
        }
    }

    @Test func malformedEventIdsAreRejectedBeforeAnyIsHandled() async throws {
        try await EventsHarness.withDatabase { pool in
            let sink = EventsHarness.recordingSink(pool: pool)
            let service = RequestContext(
                requestID: "r", method: "m", deadline: .max, metadata: [:],
                peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "publisher"), caller: nil,
                logger: EventsHarness.quiet)
            let good = EventsV1.Event(eventId: RaveID.random().hex, topic: "test.x", key: "k")
            let bad = EventsV1.Event(eventId: "not-an-id", topic: "test.x", key: "k")
            await #expect {
                _ = try await sink.deliverEvents(.init(events: [good, bad]), context: service)
            } throws: { error in
                (error as? RPCError)?.code == .invalidArgument
            }
            let remaining = try await EventsHarness.count("received_events", in: pool)
            #expect(remaining == 0)
        }
    }
}
