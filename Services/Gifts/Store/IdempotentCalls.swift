import RavePostgres

/// The first result of every call made with an idempotency key, so a retry gets the same answer and changes
/// nothing (DESIGN.md §6).
///
/// The stored fingerprint is the call's content: a replay of a key with different content is refused rather
/// than answered with a result that does not match it.
struct IdempotentCalls: Sendable {
    let pool: PostgresPool

    /// Which method a key belongs to; keys of different methods never collide.
    enum Operation: String, Sendable {
        case sendGifts = "send_gifts"
        case requestGifts = "request_gifts"
    }

    /// One call made with an idempotency key.
    struct Call: Sendable {
        var sender: RaveID
        var operation: Operation
        var key: String
        var fingerprint: [UInt8]

        /// FAILED_PRECONDITION unless `stored` (the fingerprint recorded under this key) is this call's.
        func requireSameContent(as stored: [UInt8]) throws(GiftsError) {
            guard stored == fingerprint else {
                throw .failedPrecondition(
                    "idempotency key \"\(key)\" was already used for a different call; use a new key for new content")
            }
        }
    }

    /// A call's first result, ready to be written with the call's own changes (by the same sender).
    struct Record: Sendable {
        var operation: Operation
        var key: String
        var fingerprint: [UInt8]
        var response: [UInt8]
    }

    private static let select = PostgresStatement(
        name: "gifts_idempotent_select",
        sql: """
            SELECT fingerprint, response FROM idempotent_calls
            WHERE sender_id = $1 AND operation = $2 AND idempotency_key = $3
            """)
    private static let insert = PostgresStatement(
        name: "gifts_idempotent_insert",
        sql: """
            INSERT INTO idempotent_calls (sender_id, operation, idempotency_key, fingerprint, response)
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1
            """)

    /// The stored response for this key, nil when the key is new; FAILED_PRECONDITION when the key was used for
    /// a different call.
    func storedResponse(
        sender: RaveID, operation: Operation, key: String, fingerprint: [UInt8]
    ) async throws -> [UInt8]? {
        guard let row = try await pool.execute(Self.select, [sender, operation.rawValue, key]).first else {
            return nil
        }
        try Call(sender: sender, operation: operation, key: key, fingerprint: fingerprint)
            .requireSameContent(as: try row.decode([UInt8].self, column: "fingerprint"))
        return try row.decode([UInt8].self, column: "response")
    }

    /// Records the call's result in its own transaction; false when a concurrent call with the same key won
    /// (the caller then rolls back and answers with the stored result).
    func record(
        sender: RaveID, operation: Operation, key: String, fingerprint: [UInt8], response: [UInt8],
        in transaction: PostgresTransaction
    ) async throws -> Bool {
        try await !transaction.execute(Self.insert, [sender, operation.rawValue, key, fingerprint, response]).isEmpty
    }

    /// Records `record` on `database`; false when a concurrent call with the same key won.
    static func record(_ record: Record, sender: RaveID, on database: some PostgresQueryable) async throws -> Bool {
        try await !database.execute(
            insert, [sender, record.operation.rawValue, record.key, record.fingerprint, record.response]
        ).isEmpty
    }

    /// The bytes that identify a call's content: its gift type and recipients, in order.
    static func fingerprint(giftTypeKey: String, recipients: [String]) -> [UInt8] {
        var bytes = Array(giftTypeKey.utf8)
        for recipient in recipients {
            bytes.append(0)
            bytes.append(contentsOf: recipient.utf8)
        }
        return bytes
    }
}
