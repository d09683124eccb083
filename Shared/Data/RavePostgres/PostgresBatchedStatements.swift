/// Parameter rows for many executions of one statement, encoded in binary format into one buffer.
///
/// One allocation for all the values rather than an array per parameter; libpq reads each statement's values
/// straight from here.
struct PostgresParameterBatch: Sendable {
    private(set) var bytes: [UInt8] = []
    /// Per cell, row-major: where its bytes start in `bytes`.
    private(set) var offsets: [Int32] = []
    /// Per cell, row-major: its length in bytes; -1 is NULL.
    private(set) var lengths: [Int32] = []
    /// The parameter types, from the first row (sent with PREPARE).
    private(set) var types: [UInt32] = []
    private(set) var rowCount = 0
    let columnCount: Int

    init(columnCount: Int) { self.columnCount = columnCount }

    mutating func appendRow<each Value: PostgresBinaryEncodable>(_ values: repeat each Value) {
        let recordTypes = rowCount == 0
        repeat append(each values, recordingType: recordTypes)
        rowCount += 1
    }

    private mutating func append(_ value: some PostgresBinaryEncodable, recordingType: Bool) {
        if recordingType { types.append(type(of: value).postgresType.oid) }
        offsets.append(Int32(truncatingIfNeeded: bytes.count))
        if value.isPostgresNull {
            lengths.append(-1)
            return
        }
        let start = bytes.count
        value.appendPostgresBinary(to: &bytes)
        lengths.append(Int32(truncatingIfNeeded: bytes.count - start))
    }
}

extension PostgresConnection {
    /// Batches a call keeps sent ahead of the server: enough that it never waits for the client between batches.
    static let batchesInFlight = 4

    /// Runs a prepared statement once per row of `rows` (tuples, one element per parameter), pipelined; returns
    /// the total of the rows the executions touched (one per single-row INSERT).
    ///
    /// Every `batchSize` executions end with a pipeline sync, so each batch is its own implicit transaction; up to
    /// four batches are in flight at once, so the server never waits for a round trip. At the first error no
    /// further batch is sent and the error is thrown; the failing batch is rolled back, while the batches before
    /// it and those already sent after it stay committed (the error's message says how many rows that is).
    /// Parameter types come from the Swift types (see `PostgresBinaryEncodable`).
    @discardableResult
    public func executeMany<each Value: PostgresBinaryEncodable>(
        _ statement: PostgresStatement, rows: some Sequence<(repeat each Value)>, batchSize: Int = 1_000
    ) async throws -> Int {
        var columnCount = 0
        for _ in repeat (each Value).self { columnCount += 1 }
        var batch = PostgresParameterBatch(columnCount: columnCount)
        for row in rows { batch.appendRow(repeat each row) }
        guard batch.rowCount > 0 else { return 0 }
        let work = PostgresOperation.Work.preparedBatches(statement, batch, batchSize: max(1, batchSize))
        let result = try await run(work, timeout: defaultTimeout)
        return result.last?.affectedRowCount ?? 0
    }

    // MARK: - Loop: sending batches and reading their results

    /// Queues the next batches while fewer than `batchesInFlight` are unanswered and libpq's output has drained.
    func continueBatches() {
        guard let libpq, let operation = running, var progress = operation.batchProgress,
            case .preparedBatches(let statement, let batch, let batchSize) = operation.work
        else { return }
        defer { operation.batchProgress = progress }
        while true {
            // As with COPY: libpq buffers whatever it is given, so only add to it once the last batch has left.
            switch libpq.flush() {
            case .done: break
            case .waitWritable:
                watch([.readable, .writable])
                return
            case .failed(let message):
                fail(with: PostgresError(.connectionFailed, message))
                return
            }
            guard !progress.stopped, progress.nextRow < batch.rowCount,
                progress.syncsSent - progress.syncsReceived < Self.batchesInFlight
            else {
                watch(.readable)
                return
            }
            let end = min(progress.nextRow + batchSize, batch.rowCount)
            guard libpq.sendPrepared(name: statement.name, batch, rows: progress.nextRow..<end), libpq.pipelineSync()
            else {
                fail(with: PostgresError(.connectionFailed, "could not send the statements: \(libpq.errorMessage)"))
                return
            }
            progress.nextRow = end
            progress.syncsSent += 1
        }
    }

    func handleBatchResult(_ result: LibPQResult?, _ operation: PostgresOperation, _ libpq: LibPQConnection) {
        guard var progress = operation.batchProgress else { return }
        switch result {
        case nil: operation.commandIndex += 1
        case .command(let affectedRows):
            if operation.commandIndex >= operation.hiddenCommandCount { progress.currentBatchRows += affectedRows }
        case .rows(let rows):
            if operation.commandIndex >= operation.hiddenCommandCount {
                progress.currentBatchRows += rows.affectedRowCount
            }
        case .error(let error):
            operation.error = operation.error ?? error
            progress.currentBatchFailed = true
            progress.stopped = true
            noteHiddenResult(of: operation, succeeded: false)
        case .pipelineAborted:
            noteHiddenResult(of: operation, succeeded: false)
        case .copyIn, .copyOut: break
        case .pipelineSync:
            progress.syncsReceived += 1
            if !progress.currentBatchFailed { progress.committedRows += progress.currentBatchRows }
            progress.currentBatchRows = 0
            progress.currentBatchFailed = false
        }
        operation.batchProgress = progress
        guard case .pipelineSync = result else { return }
        let sentEverything = progress.stopped || progress.nextRow >= batchRowCount(operation)
        if sentEverything && progress.syncsReceived == progress.syncsSent {
            _ = libpq.exitPipelineMode()
            if var error = operation.error {
                error.message += " (\(progress.committedRows) rows of other batches were committed)"
                operation.error = error
            }
            // The total travels as a command tag, which is what `affectedRowCount` reads.
            operation.results = [
                PostgresRows(columns: [], commandTag: String(progress.committedRows), storage: [], cells: [])
            ]
            finishRunning(operation)
        } else {
            continueBatches()
        }
    }

    private func batchRowCount(_ operation: PostgresOperation) -> Int {
        guard case .preparedBatches(_, let batch, _) = operation.work else { return 0 }
        return batch.rowCount
    }
}
