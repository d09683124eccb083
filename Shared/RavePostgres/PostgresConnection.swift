import RaveTelemetry
import RaveTransport
import Synchronization

/// One PostgreSQL connection driven by libpq's asynchronous API on an event loop.
///
/// Public methods may be called from any task; statements queue up and run one at a time, in order, on the
/// connection's loop. No libpq call that can block runs on Swift's cooperative pool: connecting, sending,
/// reading and COPY are non-blocking on the loop, and cancel requests use a thread of their own.
public final class PostgresConnection: PostgresQueryable, @unchecked Sendable {
    // @unchecked: all mutable state is confined to `loop` (asserted there); `closedFlag` is atomic.

    public let loop: EventLoop
    /// The per-statement timeout used when a call does not pass its own; nil waits forever.
    public let defaultTimeout: Duration?
    let logger: Logger
    private let closedFlag = Atomic<Bool>(false)
    private let nextOperationID = Atomic<UInt64>(1)

    private var libpq: LibPQConnection?
    private var registration: IORegistration?
    private var interest: IOEvents = []
    private var connectContinuation: CheckedContinuation<Void, any Error>?
    private var connectTimer: TimerHandle?
    private var queue: [PostgresOperation] = []
    private var queueHead = 0
    private var running: PostgresOperation?
    private var preparedStatements: Set<String> = []
    private var cancelRequest: PostgresCancelRequest?
    /// Called on the loop for every NOTIFY received; set by `PostgresListener`.
    var notificationHandler: ((PostgresNotification) -> Void)?
    /// Called on the loop once when the connection breaks or is closed.
    var closeHandler: ((PostgresError) -> Void)?

    private init(loop: EventLoop, defaultTimeout: Duration?, logger: Logger) {
        self.loop = loop
        self.defaultTimeout = defaultTimeout
        self.logger = logger
    }

    /// Opens a connection; fails with `.connectTimeout` after `timeout`, or `.connectionFailed` with libpq's reason.
    public static func connect(
        to connectionString: String, on loop: EventLoop, timeout: Duration = .seconds(10),
        defaultTimeout: Duration? = nil, logger: Logger = Logger(label: "postgres")
    ) async throws -> PostgresConnection {
        let connection = PostgresConnection(loop: loop, defaultTimeout: defaultTimeout, logger: logger)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute { connection.startConnecting(connectionString, timeout: timeout, continuation) }
        }
        return connection
    }

    /// Whether the connection is broken or closed; a pool drops such connections.
    public var isClosed: Bool { closedFlag.load(ordering: .acquiring) }

    /// Closes the connection; queued statements fail with `PostgresError.connectionClosed`.
    public func close() {
        loop.execute { self.fail(with: .connectionClosed) }
    }

    // MARK: - Statements

    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await run(.query(query), timeout: defaultTimeout).last ?? .empty
    }

    /// Runs `query` with its own timeout (nil: no timeout), cancelling it on the server when it passes.
    @discardableResult
    public func query(_ query: PostgresQuery, timeout: Duration?) async throws -> PostgresRows {
        try await run(.query(query), timeout: timeout).last ?? .empty
    }

    @discardableResult
    public func execute(
        _ statement: PostgresStatement, _ parameters: [(any PostgresEncodable)?] = []
    )
        async throws -> PostgresRows
    {
        let values = parameters.map { $0?.postgresValue ?? nil }
        return try await run(.prepared(statement, values), timeout: defaultTimeout).last ?? .empty
    }

    /// Runs several SQL statements (simple-query protocol, no parameters), such as a migration file.
    public func runScript(_ sql: String) async throws {
        _ = try await run(.script(sql), timeout: defaultTimeout)
    }

    /// Sends every query in one round trip (libpq pipeline mode); returns their results in order.
    ///
    /// The queries run as one implicit transaction: if one fails, none of them take effect.
    public func pipeline(_ queries: [PostgresQuery]) async throws -> [PostgresRows] {
        guard !queries.isEmpty else { return [] }
        return try await run(.pipeline(queries), timeout: defaultTimeout)
    }

    /// Bulk-loads `rows` into `table` with `COPY … FROM STDIN` (text format); returns the number of rows copied.
    @discardableResult
    public func copyFrom(
        table: String, columns: [String], rows: some Sequence<[(any PostgresEncodable)?]>
    ) async throws -> Int {
        let quotedColumns = columns.map(Self.quoteIdentifier).joined(separator: ", ")
        let sql = "COPY \(Self.quoteQualified(table)) (\(quotedColumns)) FROM STDIN"
        let chunks = CopyTextEncoder.encode(rows)
        let result = try await run(.copy(sql: sql, chunks: chunks), timeout: defaultTimeout)
        return result.last?.affectedRowCount ?? 0
    }

    /// Quotes a name for SQL ("my table" → "\"my table\"").
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func quoteQualified(_ name: String) -> String {
        name.split(separator: ".").map { quoteIdentifier(String($0)) }.joined(separator: ".")
    }

    private func run(_ work: PostgresOperation.Work, timeout: Duration?) async throws -> [PostgresRows] {
        let id = nextOperationID.wrappingAdd(1, ordering: .relaxed).oldValue
        let cancelled = PostgresOperation.CancelFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let operation = PostgresOperation(
                    id: id, work: work, timeout: timeout, cancelFlag: cancelled, continuation: continuation)
                loop.execute { self.enqueue(operation) }
            }
        } onCancel: {
            cancelled.set()
            loop.execute { self.cancel(operationID: id, reason: PostgresError(.cancelled, "the task was cancelled")) }
        }
    }

    // MARK: - Loop: connecting

    private func startConnecting(
        _ connectionString: String, timeout: Duration, _ continuation: CheckedContinuation<Void, any Error>
    ) {
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
    private func watch(_ events: IOEvents) {
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

    private func enqueue(_ operation: PostgresOperation) {
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

    private func cancel(operationID: UInt64, reason: PostgresError) {
        if let running, running.id == operationID {
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
        flushOutput()
    }

    private func send(_ operation: PostgresOperation, through libpq: LibPQConnection) -> Bool {
        switch operation.work {
        case .query(let query):
            return libpq.sendQuery(query.sql, query.parameters)
        case .script(let sql), .copy(let sql, _):
            return libpq.sendScript(sql)
        case .prepared(let statement, let values):
            if preparedStatements.contains(statement.name) {
                return libpq.sendPrepared(name: statement.name, values)
            }
            // Prepare and execute in the same round trip.
            operation.inPipeline = true
            operation.preparesStatement = true
            return libpq.enterPipelineMode() && libpq.sendPrepare(name: statement.name, sql: statement.sql, values)
                && libpq.sendPrepared(name: statement.name, values) && libpq.pipelineSync()
        case .pipeline(let queries):
            operation.inPipeline = true
            guard libpq.enterPipelineMode() else { return false }
            for query in queries where !libpq.sendQuery(query.sql, query.parameters) { return false }
            return libpq.pipelineSync()
        }
    }

    private func flushOutput() {
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
        drainResults()
    }

    private func drainResults() {
        while let libpq = self.libpq, let operation = running, !operation.copying, !libpq.isBusy {
            let result = libpq.nextResult()
            if operation.inPipeline {
                handlePipelineResult(result, operation, libpq)
            } else {
                handleResult(result, operation, libpq)
            }
        }
    }

    private func handleResult(_ result: LibPQResult?, _ operation: PostgresOperation, _ libpq: LibPQConnection) {
        switch result {
        case nil: finishRunning(operation)
        case .rows(let rows): operation.results.append(rows)
        case .error(let error): operation.error = operation.error ?? error
        case .copyIn:
            operation.copying = true
            continueCopy()
        case .pipelineSync, .pipelineAborted: break
        }
    }

    private func handlePipelineResult(_ result: LibPQResult?, _ operation: PostgresOperation, _ libpq: LibPQConnection)
    {
        switch result {
        case nil: operation.commandIndex += 1
        case .rows(let rows):
            if operation.preparesStatement, operation.commandIndex == 0,
                case .prepared(let statement, _) = operation.work
            {
                preparedStatements.insert(statement.name)
            } else {
                operation.results.append(rows)
            }
        case .error(let error): operation.error = operation.error ?? error
        case .pipelineAborted, .copyIn: break
        case .pipelineSync:
            _ = libpq.exitPipelineMode()
            finishRunning(operation)
        }
    }

    private func continueCopy() {
        guard let libpq, let operation = running, case .copy(_, let chunks) = operation.work else { return }
        while operation.copyChunk < chunks.count {
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

    private func finishRunning(_ operation: PostgresOperation) {
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

    private func complete(_ operation: PostgresOperation, _ result: Result<[PostgresRows], any Error>) {
        if let timer = operation.timer { loop.cancelTimer(timer) }
        operation.timer = nil
        operation.finish(result)
    }

    /// Breaks the connection: everything waiting fails with `error`, the socket is released.
    private func fail(with error: PostgresError) {
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

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
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
            if running?.copying == true { continueCopy() } else { flushOutput() }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            readInput()
        }
    }
}

/// One queued call on a connection: what to send, what came back, and who is waiting.
final class PostgresOperation: @unchecked Sendable {
    // @unchecked: created by the calling task, then read and mutated only on the connection's loop.

    enum Work {
        case query(PostgresQuery)
        case script(String)
        case prepared(PostgresStatement, [PostgresValue?])
        case pipeline([PostgresQuery])
        case copy(sql: String, chunks: [[UInt8]])
    }

    /// Set by the cancellation handler, which may run before the operation reaches the loop.
    final class CancelFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        func set() { flag.store(true, ordering: .releasing) }
        var isSet: Bool { flag.load(ordering: .acquiring) }
    }

    let id: UInt64
    let work: Work
    let timeout: Duration?
    let cancelFlag: CancelFlag
    private var continuation: CheckedContinuation<[PostgresRows], any Error>?
    var timer: TimerHandle?
    var cancelReason: PostgresError?
    var inPipeline = false
    var preparesStatement = false
    var commandIndex = 0
    var copying = false
    var copyChunk = 0
    var results: [PostgresRows] = []
    var error: PostgresError?

    init(
        id: UInt64, work: Work, timeout: Duration?, cancelFlag: CancelFlag,
        continuation: CheckedContinuation<[PostgresRows], any Error>
    ) {
        self.id = id
        self.work = work
        self.timeout = timeout
        self.cancelFlag = cancelFlag
        self.continuation = continuation
    }

    func finish(_ result: Result<[PostgresRows], any Error>) {
        continuation?.resume(with: result)
        continuation = nil
    }
}
