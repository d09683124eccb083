import RavePostgres

/// Per-user locks that order the relationship writes touching one user, under READ COMMITTED.
///
/// A friend request, an acceptance, a block and a merge each take the locks of the users they relate, in one
/// statement and in ascending key order, before reading anything: writers on the same users then queue instead of
/// failing with serialization errors (SERIALIZABLE aborted 4 to 19 of 30 concurrent requests to one player), and
/// each statement after the lock sees what the previous holder committed. Two users asking each other at once
/// queue on the same two locks, so the second finds the first's request and turns it into a friendship; a block
/// waits for a pending acceptance between the two and then removes it. Lock keys are transaction-scoped advisory
/// locks (released at commit or rollback), one 64-bit key per Rave ID (a publisher's orders its list creations);
/// two ids sharing a key only queue together.
enum RelationshipLocks {
    private static let lock = PostgresStatement(
        name: "social_lock_users", sql: "SELECT pg_advisory_xact_lock(k) FROM unnest($1::int8[]) AS u (k)")

    /// Takes the locks of `users` for the rest of `transaction`.
    static func lock(_ users: [RaveID], in transaction: PostgresTransaction) async throws {
        // Sorted and without repeats: every transaction takes shared keys in the same order, so none deadlock.
        let keys = Set(users.map(key)).sorted()
        try await transaction.execute(lock, [PostgresArrayParameter(keys)])
    }

    /// The lock key of a Rave ID (its two halves folded together).
    static func key(_ id: RaveID) -> Int64 { Int64(bitPattern: id.high ^ id.low) }
}
