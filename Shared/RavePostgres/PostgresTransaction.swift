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
    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    ///
    /// With `retryOnSerializationFailure`, a serialization failure (40001) or deadlock (40P01) reruns the whole
    /// closure, after a short randomized backoff, up to `maxAttempts` times; only pass true when `body` has no
    /// effects outside the database.
    @discardableResult
    public func transaction<Result>(
        isolation: PostgresIsolation = .readCommitted, retryOnSerializationFailure: Bool = false,
        maxAttempts: Int = 5, _ body: (PostgresTransaction) async throws -> Result
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await withConnection { connection in
                    try await runTransaction(on: connection, isolation: isolation, body)
                }
            } catch let error as PostgresError
                where retryOnSerializationFailure && error.isRetryableTransactionFailure && attempt < maxAttempts
            {
                // Jitter keeps two colliding transactions from colliding again on the retry.
                let milliseconds = Int.random(in: 1...(5 << min(attempt, 5)))
                try await Task.sleep(for: .milliseconds(milliseconds))
                attempt += 1
            }
        }
    }

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
