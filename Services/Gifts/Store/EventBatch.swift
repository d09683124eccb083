import RaveEvents
import RaveOutbox
import RavePostgres

/// Publishes many events of one topic in one round trip, for a request to 20 players.
///
/// `EventOutbox.publish` writes one row and one NOTIFY per event, so 20 events cost 40 round trips inside the
/// request's transaction. This writes the same `outbox_events` rows (same columns, ids in order, so per-key order
/// holds) with one `INSERT … SELECT unnest` and one NOTIFY. It belongs in RaveEvents as an `EventOutbox.publish`
/// overload; until it moves there, it lives here and single events still go through `EventOutbox.publish`. (Sends
/// write their events in the send's own statement, `GiftStore.send`.)
enum EventBatch {
    private static let insert = PostgresStatement(
        name: "gifts_outbox_insert_many",
        sql: """
            INSERT INTO outbox_events (event_id, topic, key, payload)
            SELECT e.event_id, $1, e.key, decode(e.payload, 'hex')
            FROM unnest($2::uuid[], $3::text[], $4::text[]) WITH ORDINALITY AS e (event_id, key, payload, position)
            ORDER BY e.position
            """)
    private static let notify = PostgresStatement(
        name: "gifts_outbox_notify", sql: "SELECT pg_notify('\(Outbox.channel)', '')")

    /// Records one event of `topic` per (key, payload), in order, in `transaction`; a single event takes
    /// `EventOutbox.publish` itself.
    static func publish(
        in transaction: PostgresTransaction, topic: String, events: [(key: String, payload: [UInt8])]
    ) async throws {
        if events.count == 1 {
            try await EventOutbox.publish(in: transaction, topic: topic, key: events[0].key, payload: events[0].payload)
            return
        }
        guard !events.isEmpty else { return }
        // bytea arrays have no binary encoder here; hex text is cheap at these sizes (~150 bytes an event).
        let ids = events.map { _ in RaveID.random() }
        try await transaction.execute(
            insert, [topic, ids, events.map(\.key), events.map { hexadecimal($0.payload) }])
        try await transaction.execute(notify)
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
