import RaveTelemetry
import RaveTransport
import Synchronization

/// How strongly concurrent transactions are kept apart (PostgreSQL's isolation levels).
public enum PostgresIsolation: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

/// A connection inside `BEGIN … COMMIT`; everything run through it is part of the transaction.
public struct PostgresTransaction: PostgresQueryable {
    public let connection: PostgresConnection
    /// The pool that runs the transaction.
    public let pool: PostgresPool
    let commitActions = CommitActions()

    /// Runs `action` once the transaction has committed (never after a rollback), before `transaction` returns:
    /// for work that must not hold the transaction open, such as waking the readers of what it wrote.
    public func afterCommit(_ action: @escaping @Sendable () -> Void) {
        commitActions.actions.withLock { $0.append(action) }
    }

    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await connection.query(query)
    }

    @discardableResult
    public func execute(
        _ statement: PostgresStatement, _ parameters: [(any PostgresEncodable)?] = []
    )
        async throws -> PostgresRows
    {
        try await connection.execute(statement, parameters)
    }

    /// Sends the queries in one round trip, inside the transaction.
    public func pipeline(_ queries: [PostgresQuery]) async throws -> [PostgresRows] {
        try await connection.pipeline(queries)
    }

    /// Runs a prepared statement once per parameter row in one round trip, inside the transaction.
    public func pipeline(
        _ statement: PostgresStatement, parameterRows: [[(any PostgresEncodable)?]]
    ) async throws -> [PostgresRows] {
        try await connection.pipeline(statement, parameterRows: parameterRows)
    }
}

extension PostgresPool {
    /// When the call being served stops waiting (monotonic nanoseconds, as `RequestContext.deadline`), if known.
    ///
    /// A handler sets it around its database work (`$callDeadline.withValue(context.deadline) { … }`) so that
    /// `transaction` does not retry past the moment nobody waits for the answer.
    @TaskLocal public static var callDeadline: UInt64?

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    ///
    /// With `retryOnSerializationFailure`, a serialization failure (40001) or deadlock (40P01) reruns the whole
    /// closure after a jittered, growing backoff, up to `maxAttempts` times and never past `callDeadline`; only pass
    /// true when `body` has no effects outside the database. Retries are the exception: a statement design that
    /// conflicts under load should take its locks in a fixed order instead. Each conflict and each retry is counted
    /// in `TransactionMetrics`.
    @discardableResult
    public func transaction<Result>(
        isolation: PostgresIsolation = .readCommitted, retryOnSerializationFailure: Bool = false,
        maxAttempts: Int = 10, _ body: (PostgresTransaction) async throws -> Result
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await withConnection { connection in
                    try await runTransaction(on: connection, isolation: isolation, body)
                }
            } catch let error as PostgresError where error.isRetryableTransactionFailure {
                TransactionMetrics.shared.conflictSeen(sqlState: error.sqlState)
                guard retryOnSerializationFailure, attempt < maxAttempts,
                    let delay = Self.retryDelay(after: attempt, deadline: Self.callDeadline)
                else { throw error }
                TransactionMetrics.shared.retries.increment()
                try await Task.sleep(for: .nanoseconds(Int64(delay)))
                attempt += 1
            }
        }
    }

    /// The pause before retry number `attempt` (nanoseconds), or nil when it would end too close to `deadline`.
    ///
    /// Full jitter over an exponential ceiling (1 ms, 2 ms, 4 ms … 128 ms): colliding transactions spread out
    /// instead of colliding again in step.
    static func retryDelay(
        after attempt: Int, deadline: UInt64?, now: UInt64 = monotonicNanoseconds()
    ) -> UInt64? {
        let ceiling: UInt64 = 1_000_000 << UInt64(min(max(attempt - 1, 0), 7))
        let delay = UInt64.random(in: ceiling / 4...ceiling)
        // Leave the retried transaction time to run: a retry that cannot finish before the deadline only adds load.
        if let deadline, now &+ delay &+ Self.minimumAttemptTime >= deadline { return nil }
        return delay
    }

    /// The least time left before a deadline for a retry to be worth starting (50 ms).
    static let minimumAttemptTime: UInt64 = 50_000_000

    private func runTransaction<Result>(
        on connection: PostgresConnection, isolation: PostgresIsolation,
        _ body: (PostgresTransaction) async throws -> Result
    ) async throws -> Result {
        try await connection.query(PostgresQuery("BEGIN ISOLATION LEVEL \(isolation.rawValue)"))
        do {
            let transaction = PostgresTransaction(connection: connection, pool: self)
            let result = try await body(transaction)
            try await connection.query(PostgresQuery("COMMIT"))
            for action in transaction.commitActions.actions.withLock({ $0 }) { action() }
            return result
        } catch {
            do {
                try await connection.query(PostgresQuery("ROLLBACK"))
            } catch {
                // A connection whose transaction state is unknown must not go back into the pool.
                connection.close()
            }
            throw error
        }
    }
}

/// What a transaction runs after its commit (`PostgresTransaction.afterCommit`).
final class CommitActions: Sendable {
    let actions = Mutex<[@Sendable () -> Void]>([])
}

/// Counters of transaction conflicts in the process's `MetricsRegistry.shared` (so in every service's /metrics).
public final class TransactionMetrics: Sendable {
    /// The process's counters.
    public static let shared = TransactionMetrics(registry: .shared)

    /// Transactions rerun after a serialization failure or deadlock.
    public let retries: Counter
    /// Serialization failures (SQLSTATE 40001) PostgreSQL reported, retried or not.
    public let serializationFailures: Counter
    /// Deadlocks (SQLSTATE 40P01) PostgreSQL reported, retried or not.
    public let deadlocks: Counter

    init(registry: MetricsRegistry) {
        retries = registry.counter(
            "db.client.transaction.retries", help: "Transactions rerun after a serialization failure or deadlock.")
        let conflicts = "Transaction conflicts PostgreSQL reported (retried or not), by SQLSTATE."
        serializationFailures = registry.counter(
            "db.client.transaction.conflicts", help: conflicts, labels: [("sqlstate", "40001")])
        deadlocks = registry.counter(
            "db.client.transaction.conflicts", help: conflicts, labels: [("sqlstate", "40P01")])
    }

    func conflictSeen(sqlState: String?) {
        (sqlState == "40P01" ? deadlocks : serializationFailures).increment()
    }
}
