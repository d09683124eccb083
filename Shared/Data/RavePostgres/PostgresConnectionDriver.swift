import RaveTransport

/// The loop side of `PostgresConnection`: connecting, the statement queue, and feeding libpq from epoll events.
///
/// Everything here runs on the connection's event loop; each entry point asserts it (debug builds only).
extension PostgresConnection {
    // MARK: - Loop: connecting

    func startConnecting(
        _ connectionString: String, timeout: Duration, _ continuation: CheckedContinuation<Void, any Error>
    ) {
        assert(loop.isInLoop, "PostgresConnection.startConnecting must run on the connection's loop")
        let connection: LibPQConnection
        do {
            connection = try LibPQConnection(connectionString: connectionString)
        } catch {
            closedFlag.store(true, ordering: .releasing)
            continuation.resume(throwing: error)
            return
        }
        libpq = connection
        connectContinuation = continuation
        connectTimer = loop.scheduleTimer(after: Self.nanoseconds(timeout)) { [self] in
            connectTimer = nil
            fail(with: PostgresError(.connectTimeout, "connecting to PostgreSQL took longer than \(timeout)"))
        }
        // libpq's contract: after PQconnectStart, wait until the socket is writable, then poll.
        watch(.writable)
    }

    private func continueConnecting() {
        guard let libpq else { return }
        switch libpq.connectPoll() {
        case .waitReadable: watch(.readable)
        case .waitWritable: watch(.writable)
        case .failed(let message):
            fail(with: PostgresError(.connectionFailed, "could not connect to PostgreSQL: \(message)"))
        case .connected:
            if let connectTimer { loop.cancelTimer(connectTimer) }
            connectTimer = nil
            cancelRequest = libpq.makeCancelRequest()
            watch(.readable)
            connectContinuation?.resume()
            connectContinuation = nil
        }
    }

    /// Points epoll at libpq's current socket with `events`; libpq may switch sockets while connecting.
    func watch(_ events: IOEvents) {
        assert(loop.isInLoop, "PostgresConnection.watch must run on the connection's loop")
        guard let libpq else { return }
        let socket = libpq.socket
        do {
            if let registration, registration.fd != socket {
                loop.deregister(registration)
                self.registration = nil
            }
            if let registration {
                if events != interest { try loop.modify(registration, interest: events) }
            } else if socket >= 0 {
                registration = try loop.register(fd: socket, interest: events, handler: self)
            }
            interest = events
        } catch {
            fail(with: PostgresError(.connectionFailed, "could not watch the database socket: \(error)"))
        }
    }

    // MARK: - Loop: operations

    func enqueue(_ operation: PostgresOperation) {
        assert(loop.isInLoop, "PostgresConnection.enqueue must run on the connection's loop")
        if operation.cancelFlag.isSet {
            operation.finish(.failure(PostgresError(.cancelled, "the task was cancelled")))
            return
        }
        guard libpq != nil, connectContinuation == nil, !isClosed else {
            operation.finish(.failure(PostgresError.connectionClosed))
            return
        }
        if let timeout = operation.timeout {
            operation.timer = loop.scheduleTimer(after: Self.nanoseconds(timeout)) { [self] in
                let reason = PostgresError(.queryTimeout, "the statement took longer than \(timeout) and was cancelled")
                cancel(operationID: operation.id, reason: reason)
            }
        }
        queue.append(operation)
        startNextIfIdle()
    }

    func cancel(operationID: UInt64, reason: PostgresError) {
        assert(loop.isInLoop, "PostgresConnection.cancel must run on the connection's loop")
        if let running, running.id == operationID {
            // Nobody takes a cancelled copy's data: read on (discarding it) to see the server's answer.
            if case .copyOut(_, let sink) = running.work { sink.abandon() }
            guard running.cancelReason == nil else { return }
            running.cancelReason = reason
            cancelRequest?.sendInBackground()
            return
        }
        guard let index = queue[queueHead...].firstIndex(where: { $0.id == operationID }) else { return }
        let operation = queue.remove(at: index)
        complete(operation, .failure(reason))
    }

    private func startNextIfIdle() {
        guard running == nil, let libpq else { return }
        guard queueHead < queue.count else {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
            return
        }
        let operation = queue[queueHead]
        queueHead += 1
        if queueHead > 64 {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        running = operation
        guard send(operation, through: libpq) else {
            fail(with: PostgresError(.connectionFailed, "could not send the statement: \(libpq.errorMessage)"))
            return
        }
        if operation.batchProgress != nil { continueBatches() } else { flushOutput() }
    }

    private func send(_ operation: PostgresOperation, through libpq: LibPQConnection) -> Bool {
        switch operation.work {
        case .query(let query):
            return libpq.sendQuery(query.sql, query.parameters)
        case .script(let sql), .copy(let sql, _):
            return libpq.sendScript(sql)
        case .copyOut(let sql, _):
            // The extended protocol, which takes exactly one statement.
            return libpq.sendQuery(sql, [])
        case .prepared(let statement, let values):
            if preparedStatements.lookUp(statement.name) {
                return libpq.sendPrepared(name: statement.name, values)
            }
            // Prepare and execute in the same round trip.
            operation.inPipeline = true
            return libpq.enterPipelineMode() && prepare(statement, values, for: operation, through: libpq)
                && libpq.sendPrepared(name: statement.name, values) && libpq.pipelineSync()
        case .preparedPipeline(let statement, let rows):
            operation.inPipeline = true
            guard libpq.enterPipelineMode() else { return false }
            if !preparedStatements.lookUp(statement.name) {
                guard prepare(statement, rows.first ?? [], for: operation, through: libpq) else { return false }
            }
            for values in rows where !libpq.sendPrepared(name: statement.name, values) { return false }
            return libpq.pipelineSync()
        case .preparedBatches(let statement, let batch, _):
            operation.inPipeline = true
            operation.batchProgress = PostgresOperation.BatchProgress()
            guard libpq.enterPipelineMode() else { return false }
            if !preparedStatements.lookUp(statement.name) {
                return prepare(statement, types: batch.types, for: operation, through: libpq)
            }
            return true
        case .pipeline(let queries):
            operation.inPipeline = true
            guard libpq.enterPipelineMode(),
                let prepared = prepareStatements(of: queries, for: operation, through: libpq)
            else { return false }
            for query in queries {
                let sent =
                    if let name = query.statementName, prepared.contains(name) {
                        libpq.sendPrepared(name: name, query.parameters)
                    } else {
                        libpq.sendQuery(query.sql, query.parameters)
                    }
                if !sent { return false }
            }
            return libpq.pipelineSync()
        }
    }

    func flushOutput() {
        assert(loop.isInLoop, "PostgresConnection.flushOutput must run on the connection's loop")
        guard let libpq else { return }
        switch libpq.flush() {
        case .done: watch(.readable)
        case .waitWritable: watch([.readable, .writable])
        case .failed(let message): fail(with: PostgresError(.connectionFailed, message))
        }
    }

    private func readInput() {
        guard let libpq else { return }
        guard libpq.consumeInput() else {
            fail(with: PostgresError(.connectionFailed, "lost the database connection: \(libpq.errorMessage)"))
            return
        }
        let notifications = libpq.notifications()
        if let notificationHandler {
            for notification in notifications { notificationHandler(notification) }
        }
        if let running, running.copying, case .copyOut = running.work {
            guard continueCopyOut() else { return }
        }
        drainResults()
    }

    private func drainResults() {
        while let libpq = self.libpq, let operation = running, !operation.copying, !libpq.isBusy {
            if let progress = operation.batchProgress {
                // With nothing outstanding libpq would hand back NULL forever.
                guard progress.syncsReceived < progress.syncsSent else { return }
                handleBatchResult(libpq.nextResult(keepingRows: false), operation, libpq)
            } else if operation.inPipeline {
                let result = libpq.nextResult()
                handlePipelineResult(result, operation, libpq)
            } else {
                handleResult(libpq.nextResult(), operation, libpq)
            }
        }
    }

    private func handleResult(_ result: LibPQResult?, _ operation: PostgresOperation, _ libpq: LibPQConnection) {
        switch result {
        case nil: finishRunning(operation)
        case .rows(let rows): operation.results.append(rows)
        case .command: break
        case .error(let error): operation.error = operation.error ?? error
        case .copyIn:
            operation.copying = true
            continueCopy()
        case .copyOut:
            guard case .copyOut = operation.work else {
                // Only `copyOut` has somewhere to put the data; libpq would hand back this result forever.
                fail(with: PostgresError(.client, "COPY … TO STDOUT runs through copyOut, not as a query"))
                return
            }
            operation.copying = true
            operation.copyOutBuffer.reserveCapacity(Self.copyOutBufferCapacity(operation))
            _ = continueCopyOut()
        case .pipelineSync, .pipelineAborted: break
        }
    }

    private func handlePipelineResult(_ result: LibPQResult?, _ operation: PostgresOperation, _ libpq: LibPQConnection)
    {
        switch result {
        case nil: operation.commandIndex += 1
        case .rows(let rows):
            if operation.commandIndex >= operation.hiddenCommandCount { operation.results.append(rows) }
        case .error(let error):
            operation.error = operation.error ?? error
            // Say, a DEALLOCATE or PREPARE in an aborted transaction.
            noteHiddenResult(of: operation, succeeded: false)
        case .pipelineAborted: noteHiddenResult(of: operation, succeeded: false)
        case .copyIn, .copyOut, .command: break
        case .pipelineSync:
            _ = libpq.exitPipelineMode()
            finishRunning(operation)
        }
    }

    private func continueCopy() {
        guard let libpq, let operation = running, case .copy(_, let chunks) = operation.work else { return }
        while operation.copyChunk < chunks.count {
            // libpq never refuses data on a non-blocking socket: it grows its output buffer instead, and moves the
            // unsent rest to the front of it after each partial send. So hand it the next chunk only once the
            // previous one has left, which keeps that buffer (and the copying) at one chunk.
            switch libpq.flush() {
            case .done: break
            case .waitWritable:
                watch([.readable, .writable])
                return
            case .failed(let message):
                fail(with: PostgresError(.connectionFailed, message))
                return
            }
            switch libpq.putCopyData(chunks[operation.copyChunk]) {
            case .done: operation.copyChunk += 1
            case .waitWritable:
                watch([.readable, .writable])
                return
            case .failed(let message):
                fail(with: PostgresError(.connectionFailed, message))
                return
            }
        }
        switch libpq.putCopyEnd(failure: nil) {
        case .done:
            operation.copying = false
            flushOutput()
        case .waitWritable: watch([.readable, .writable])
        case .failed(let message): fail(with: PostgresError(.connectionFailed, message))
        }
    }

    /// Moves a COPY OUT's data from libpq into chunks for its sink; true once the data has ended (the command's
    /// result is then read like any other).
    ///
    /// Returns false to wait: for the socket to be readable, or, when the sink is full, for `resumeCopyOut`.
    private func continueCopyOut() -> Bool {
        guard let libpq, let operation = running, case .copyOut(_, let sink) = operation.work,
            !operation.copyOutPaused
        else { return false }
        // A local buffer: appending to the operation's property would check exclusive access once per row.
        var buffer = operation.copyOutBuffer
        operation.copyOutBuffer = []
        while true {
            switch libpq.getCopyData(appendingTo: &buffer) {
            case .data:
                guard buffer.count >= sink.chunkBytes else { continue }
                let chunk = buffer
                buffer = []
                buffer.reserveCapacity(Self.copyOutBufferCapacity(operation))
                guard sink.push(chunk) else {
                    // Unread data then waits in the socket, and the server waits for room.
                    operation.copyOutBuffer = buffer
                    operation.copyOutPaused = true
                    watch([])
                    return false
                }
            case .waitReadable:
                operation.copyOutBuffer = buffer
                return false
            case .ended:
                if !buffer.isEmpty { _ = sink.push(buffer) }
                operation.copying = false
                return true
            case .failed(let message):
                fail(with: PostgresError(.connectionFailed, "lost the database connection during COPY: \(message)"))
                return false
            }
        }
    }

    /// Reads on after the sink of the running COPY OUT made room (or was abandoned).
    func resumeCopyOut(operationID: UInt64) {
        assert(loop.isInLoop, "PostgresConnection.resumeCopyOut must run on the connection's loop")
        guard let operation = running, operation.id == operationID, operation.copyOutPaused else { return }
        operation.copyOutPaused = false
        watch(.readable)
        // libpq may hold data already, which no readable event would announce.
        if continueCopyOut() { drainResults() }
    }

    /// A chunk and the message that completes it: messages are about one row each, so rarely more than this.
    private static func copyOutBufferCapacity(_ operation: PostgresOperation) -> Int {
        guard case .copyOut(_, let sink) = operation.work else { return 0 }
        return sink.chunkBytes + 8192
    }

    func finishRunning(_ operation: PostgresOperation) {
        assert(loop.isInLoop, "PostgresConnection.finishRunning must run on the connection's loop")
        running = nil
        if let error = operation.error {
            // Our own cancel request comes back as 57014; report why we sent it instead.
            let reported = error.sqlState == "57014" ? operation.cancelReason ?? error : error
            complete(operation, .failure(reported))
        } else {
            complete(operation, .success(operation.results))
        }
        startNextIfIdle()
    }

    func complete(_ operation: PostgresOperation, _ result: Result<[PostgresRows], any Error>) {
        assert(loop.isInLoop, "PostgresConnection.complete must run on the connection's loop")
        if let timer = operation.timer { loop.cancelTimer(timer) }
        operation.timer = nil
        operation.finish(result)
    }

    /// Breaks the connection: everything waiting fails with `error`, the socket is released.
    func fail(with error: PostgresError) {
        assert(loop.isInLoop, "PostgresConnection.fail must run on the connection's loop")
        guard libpq != nil || connectContinuation != nil else { return }
        closedFlag.store(true, ordering: .releasing)
        if let registration { loop.deregister(registration) }
        registration = nil
        libpq = nil
        if let connectTimer { loop.cancelTimer(connectTimer) }
        connectTimer = nil
        if let connectContinuation {
            self.connectContinuation = nil
            connectContinuation.resume(throwing: error)
        }
        var waiting: [PostgresOperation] = running.map { [$0] } ?? []
        waiting += queue[queueHead...]
        running = nil
        queue = []
        queueHead = 0
        for operation in waiting { complete(operation, .failure(error)) }
        if let closeHandler {
            self.closeHandler = nil
            closeHandler(error)
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}

extension PostgresConnection: IOHandler {
    public func handleEvents(_ events: IOEvents) {
        if connectContinuation != nil {
            continueConnecting()
            return
        }
        if events.contains(.writable) {
            if let running, running.copying, case .copyOut = running.work {
                // Everything was sent before the data began to come.
            } else if running?.copying == true {
                continueCopy()
            } else if running?.batchProgress != nil {
                continueBatches()
            } else {
                flushOutput()
            }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            readInput()
        }
    }
}
