import RavePostgres

/// A transactional outbox: a service writes an event row in the same transaction as its state change, and an
/// `OutboxDispatcher` delivers it afterwards, at least once and in order per key.
public enum Outbox {
    /// The tables a service adds to its migrations (as one migration, never edited afterwards).
    ///
    /// `outbox_events` holds events until delivered (and after, for a look into deliveries, until the dispatcher
    /// prunes them: `OutboxDispatcher.Configuration.retention`); `processed_events` lets a receiver remember which
    /// event ids it already handled (`ProcessedEvents.pruneBatch`).
    public static let migration = """
        CREATE TABLE outbox_events (
            id bigserial PRIMARY KEY,
            event_id uuid NOT NULL UNIQUE,
            topic text NOT NULL,
            key text NOT NULL,
            payload bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            attempts int4 NOT NULL DEFAULT 0,
            next_attempt_at timestamptz NOT NULL DEFAULT now(),
            delivered_at timestamptz,
            last_error text
        );
        CREATE INDEX outbox_events_due ON outbox_events (next_attempt_at, id) WHERE delivered_at IS NULL;
        CREATE INDEX outbox_events_key_order ON outbox_events (key, id) WHERE delivered_at IS NULL;
        CREATE TABLE processed_events (
            event_id uuid PRIMARY KEY,
            processed_at timestamptz NOT NULL DEFAULT now()
        );
        """

    /// The LISTEN/NOTIFY channel that wakes dispatchers after a publishing commit, without waiting for a poll.
    public static let channel = "rave_outbox"

    static let insert = PostgresStatement(
        name: "outbox_insert",
        sql: "INSERT INTO outbox_events (event_id, topic, key, payload) VALUES ($1, $2, $3, $4)")
    static let notify = PostgresStatement(name: "outbox_notify", sql: "SELECT pg_notify('\(channel)', '')")
    // Payloads travel as hex text: bytea arrays have no binary encoder here, and events are small.
    static let insertMany = PostgresStatement(
        name: "outbox_insert_many",
        sql: """
            INSERT INTO outbox_events (event_id, topic, key, payload)
            SELECT e.event_id, $1, e.key, decode(e.payload, 'hex')
            FROM unnest($2::uuid[], $3::text[], $4::text[]) WITH ORDINALITY AS e (event_id, key, payload, position)
            ORDER BY e.position
            """)

    /// Records an event in `transaction` and returns its event id.
    ///
    /// The event is delivered only if the transaction commits.
    ///
    /// Events with the same `key` are delivered in the order they were enqueued (by commit of their rows' ids);
    /// events with different keys may be delivered in any order and concurrently.
    @discardableResult
    public static func enqueue(
        in transaction: PostgresTransaction, topic: String, key: String, payload: [UInt8]
    ) async throws -> RaveID {
        let eventID = RaveID.random()
        try await transaction.execute(insert, [eventID, topic, key, payload])
        try await wakeDispatchers(after: transaction)
        return eventID
    }

    /// Records one event of `topic` per (key, payload), in this order, with one insert however many there are; a
    /// single event takes `enqueue(in:topic:key:payload:)`.
    public static func enqueue(
        in transaction: PostgresTransaction, topic: String, events: [(key: String, payload: [UInt8])]
    ) async throws {
        guard events.count > 1 else {
            if let event = events.first {
                try await enqueue(in: transaction, topic: topic, key: event.key, payload: event.payload)
            }
            return
        }
        let ids = events.map { _ in RaveID.random() }
        try await transaction.execute(
            insertMany, [topic, ids, events.map(\.key), events.map { hexadecimal($0.payload) }])
        try await wakeDispatchers(after: transaction)
    }

    /// Wakes the dispatchers once `transaction`, which wrote events, commits.
    ///
    /// With an `OutboxWakeup` running for the transaction's pool (every `OutboxDispatcher` runs one), the commit
    /// asks it for a coalesced NOTIFY afterwards; otherwise the transaction notifies at its commit (NOTIFY is
    /// transactional: dropped on rollback), which serialises notifying commits on PostgreSQL's notify lock but
    /// needs nothing running in this process. `enqueue` calls it; call it for events written by other SQL.
    public static func wakeDispatchers(after transaction: PostgresTransaction) async throws {
        if let wakeup = OutboxWakeup.running(for: transaction.pool) {
            transaction.afterCommit { wakeup.eventsCommitted() }
        } else {
            try await transaction.execute(notify)
        }
    }

    /// Wakes the dispatchers after a commit on `pool` that wrote events outside a `PostgresTransaction` (one
    /// statement as its own transaction), through the pool's running `OutboxWakeup`; without one, the events wait
    /// for the dispatchers' poll.
    public static func eventsCommitted(on pool: PostgresPool) {
        OutboxWakeup.running(for: pool)?.eventsCommitted()
    }

    static let forget = PostgresStatement(
        name: "outbox_forget",
        sql: """
            DELETE FROM outbox_events
            WHERE key = ANY($1::text[])
               OR EXISTS (SELECT 1 FROM unnest($1::text[]) AS i (hex)
                          WHERE position(convert_to(i.hex, 'UTF8') IN payload) > 0
                             OR position(decode(i.hex, 'hex') IN payload) > 0)
            """)

    /// Deletes every event, delivered or not, whose key or payload names one of `ids`; returns how many went.
    ///
    /// An id is found as its 32 hex digits or as its 16 bytes (an account deletion). Events still due to another
    /// user about a deleted one are dropped with them.
    public static func forgetEvents(naming ids: [RaveID], in transaction: PostgresTransaction) async throws -> Int {
        try await transaction.execute(forget, [ids.map(\.hex)]).affectedRowCount
    }

    private static let digits = Array("0123456789abcdef".utf8)

    private static func hexadecimal(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// One event as the dispatcher hands it to the delivery function.
public struct OutboxEvent: Sendable, Hashable {
    /// The outbox row's position; events of one key are delivered in increasing `sequence`.
    public var sequence: Int64
    /// The id receivers deduplicate by (`ProcessedEvents.markProcessed`).
    public var eventID: RaveID
    public var topic: String
    public var key: String
    public var payload: [UInt8]
    /// Deliveries tried before this one.
    public var previousAttempts: Int
    public var createdAt: PostgresTimestamp
}

/// For receivers: remembers handled event ids so redelivered events (at-least-once) are handled once.
public enum ProcessedEvents {
    static let mark = PostgresStatement(
        name: "processed_events_mark",
        sql: "INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING")

    /// How long a processed id is remembered: far longer than a redelivery can come (a publisher that crashed
    /// between delivering and marking delivers again on its next round).
    public static let retention: Duration = .seconds(7 * 86_400)
    /// Ids one `pruneBatch` deletes at most.
    public static let pruneBatchSize = 1000

    static let prune = PostgresStatement(
        name: "processed_events_prune",
        sql: """
            DELETE FROM processed_events WHERE event_id IN (
                SELECT event_id FROM processed_events WHERE processed_at < now() - $1 * interval '1 microsecond'
                LIMIT $2)
            """)

    /// Forgets up to `pruneBatchSize` ids processed longer than `retention` ago; returns how many.
    public static func pruneBatch(
        in pool: PostgresPool, retention: Duration = ProcessedEvents.retention
    ) async throws -> Int {
        try await pool.execute(prune, [Int64(retention / .microseconds(1)), pruneBatchSize]).affectedRowCount
    }

    /// Records `eventID` in the receiver's own transaction; false when it was already processed, in which case
    /// the receiver skips its work (and the transaction may simply commit).
    public static func markProcessed(_ eventID: RaveID, in transaction: PostgresTransaction) async throws -> Bool {
        try await transaction.execute(mark, [eventID]).affectedRowCount == 1
    }
}
