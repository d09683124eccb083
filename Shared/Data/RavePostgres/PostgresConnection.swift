import RaveTelemetry
import RaveTransport
import Synchronization

/// One PostgreSQL connection driven by libpq's asynchronous API on an event loop.
///
/// This file holds the public API; PostgresConnectionDriver.swift holds the loop side that talks to libpq.
///
/// Public methods may be called from any task; statements queue up and run one at a time, in order, on the
/// connection's loop. No libpq call that can block runs on Swift's cooperative pool: connecting, sending,
/// reading and COPY (in either direction) are non-blocking on the loop, and cancel requests use a thread of their own.
public final class PostgresConnection: PostgresQueryable, @unchecked Sendable {
    // @unchecked: all mutable state is confined to `loop` (asserted there); `closedFlag` is atomic.

    public let loop: EventLoop
    /// The per-statement timeout used when a call does not pass its own; nil waits forever.
    public let defaultTimeout: Duration?
    let logger: Logger
    let closedFlag = Atomic<Bool>(false)
    private let operationIDs = Atomic<UInt64>(1)

    // Loop-confined state, driven by the extension in PostgresConnectionDriver.swift.
    var libpq: LibPQConnection?
    var registration: IORegistration?
    var interest: IOEvents = []
    var connectContinuation: CheckedContinuation<Void, any Error>?
    var connectTimer: TimerHandle?
    var queue: [PostgresOperation] = []
    var queueHead = 0
    var running: PostgresOperation?
    var preparedStatements: PreparedStatementCache
    var cancelRequest: PostgresCancelRequest?
    /// Called on the loop for every NOTIFY received; set by `PostgresListener`.
    var notificationHandler: ((PostgresNotification) -> Void)?
    /// Called on the loop once when the connection breaks or is closed.
    var closeHandler: ((PostgresError) -> Void)?

    private init(loop: EventLoop, defaultTimeout: Duration?, statementCacheSize: Int, logger: Logger) {
        self.loop = loop
        self.defaultTimeout = defaultTimeout
        self.logger = logger
        preparedStatements = PreparedStatementCache(capacity: statementCacheSize)
    }

    /// Opens a connection; fails with `.connectTimeout` after `timeout`, or `.connectionFailed` with libpq's reason.
    ///
    /// At most `statementCacheSize` prepared statements stay prepared; the least recently used one is
    /// deallocated on the server to make room for a new one.
    public static func connect(
        to connectionString: String, on loop: EventLoop, timeout: Duration = .seconds(10),
        defaultTimeout: Duration? = nil, statementCacheSize: Int = 256, logger: Logger = Logger(label: "postgres")
    ) async throws -> PostgresConnection {
        let connection = PostgresConnection(
            loop: loop, defaultTimeout: defaultTimeout, statementCacheSize: statementCacheSize, logger: logger)
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

    /// Calls `handler` once, on the loop, when the connection breaks or is closed (at once if it already is).
    func whenClosed(_ handler: @escaping @Sendable () -> Void) {
        loop.execute {
            if self.isClosed {
                handler()
            } else {
                self.closeHandler = { _ in handler() }
            }
        }
    }

    // MARK: - Statements

    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await self.query(query, timeout: defaultTimeout)
    }

    /// Runs `query` with its own timeout (nil: no timeout), cancelling it on the server when it passes.
    @discardableResult
    public func query(_ query: PostgresQuery, timeout: Duration?) async throws -> PostgresRows {
        let work: PostgresOperation.Work = query.statement.map { .prepared($0, query.parameters) } ?? .query(query)
        return try await run(work, timeout: timeout).last ?? .empty
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
    /// The queries run as one implicit transaction: if one fails, none of them take effect. Queries built from a
    /// `PostgresStatement` run as named prepared statements: those not yet prepared on this connection are
    /// prepared at the front of the same round trip, so a repeated pipeline sends Bind/Execute only.
    public func pipeline(_ queries: [PostgresQuery]) async throws -> [PostgresRows] {
        guard !queries.isEmpty else { return [] }
        return try await run(.pipeline(queries), timeout: defaultTimeout)
    }

    /// Runs a prepared statement once per parameter row, all in one round trip (pipeline mode).
    ///
    /// Returns the results in order. As with `pipeline(_:)`, they form one implicit transaction.
    public func pipeline(
        _ statement: PostgresStatement, parameterRows: [[(any PostgresEncodable)?]]
    ) async throws -> [PostgresRows] {
        guard !parameterRows.isEmpty else { return [] }
        let rows = parameterRows.map { row in row.map { $0?.postgresValue ?? nil } }
        return try await run(.preparedPipeline(statement, rows), timeout: defaultTimeout)
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

    /// A fresh id for an operation, so a late cancel or timer can tell it from the ones after it.
    func nextOperationID() -> UInt64 {
        operationIDs.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    func run(_ work: PostgresOperation.Work, timeout: Duration?) async throws -> [PostgresRows] {
        let id = nextOperationID()
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
}
