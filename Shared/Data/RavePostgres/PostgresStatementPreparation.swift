/// Named prepared statements on the loop side of `PostgresConnection`: the hidden DEALLOCATE and PREPARE commands
/// an operation sends ahead of its own, and keeping the connection's statement cache in step with their results.
///
/// Everything here runs on the connection's event loop.
extension PostgresConnection {
    /// Queues PREPARE, at the front of the pipeline, for each named statement of `queries` not yet prepared here.
    ///
    /// Returns the names the pipeline may execute as prepared statements (nil when libpq refused to queue). A
    /// statement that finds the cache full of statements this same pipeline uses is sent as plain SQL instead.
    func prepareStatements(
        of queries: [PostgresQuery], for operation: PostgresOperation, through libpq: LibPQConnection
    ) -> Set<String>? {
        var ready: Set<String> = []
        var missing: [PostgresQuery] = []
        for query in queries {
            guard let name = query.statementName, !ready.contains(name) else { continue }
            if preparedStatements.lookUp(name) {
                ready.insert(name)
            } else if !missing.contains(where: { $0.statementName == name }) {
                missing.append(query)
            }
        }
        for query in missing {
            guard let statement = query.statement else { continue }
            // With every cached statement in use by this pipeline there is nothing to evict: run it unprepared.
            if preparedStatements.isFull && !preparedStatements.hasEvictable(sparing: ready) { continue }
            guard
                prepare(
                    statement, types: query.parameters.map { $0?.type.oid ?? 0 }, sparing: ready, for: operation,
                    through: libpq)
            else { return nil }
            ready.insert(statement.name)
        }
        return ready
    }

    /// Queues PREPARE in the current pipeline, first deallocating the statement evicted to make room for it.
    func prepare(
        _ statement: PostgresStatement, _ values: [PostgresValue?], for operation: PostgresOperation,
        through libpq: LibPQConnection
    ) -> Bool {
        prepare(statement, types: values.map { $0?.type.oid ?? 0 }, for: operation, through: libpq)
    }

    /// Queues PREPARE for `statement` (with a DEALLOCATE first when the cache is full), sparing `sparing`.
    ///
    /// The cache counts the statement from now on, so one pipeline never overfills it; a PREPARE that fails
    /// takes it out again (`noteHiddenResult`).
    func prepare(
        _ statement: PostgresStatement, types: [UInt32], sparing: Set<String> = [], for operation: PostgresOperation,
        through libpq: LibPQConnection
    ) -> Bool {
        if let evicted = preparedStatements.evictIfFull(sparing: sparing) {
            operation.hiddenCommands.append(.deallocate(evicted))
            guard libpq.sendQuery("DEALLOCATE " + Self.quoteIdentifier(evicted), []) else { return false }
        }
        operation.hiddenCommands.append(.prepare(statement.name))
        preparedStatements.insert(statement.name)
        return libpq.sendPrepare(name: statement.name, sql: statement.sql, types: types)
    }

    /// Keeps the statement cache in step with the result of a hidden command (if the current one is hidden): a
    /// PREPARE that failed or never ran is forgotten, a DEALLOCATE that failed leaves its statement prepared.
    func noteHiddenResult(of operation: PostgresOperation, succeeded: Bool) {
        guard !succeeded, operation.commandIndex < operation.hiddenCommandCount else { return }
        switch operation.hiddenCommands[operation.commandIndex] {
        case .prepare(let name): preparedStatements.remove(name)
        case .deallocate(let name): preparedStatements.insert(name)
        }
    }
}
