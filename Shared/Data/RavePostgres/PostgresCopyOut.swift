import RaveTransport
import Synchronization

/// The query of a binary COPY OUT: SQL text whose interpolated values become typed SQL literals.
///
/// COPY accepts no bind parameters, so values have to be part of the statement's text. Rather than substituting
/// `$n` (which would mean parsing SQL to skip strings, comments and quoted names), the query is written as a
/// Swift string literal and only values of a few types can be interpolated; each is written by this library as a
/// quoted, typed, parenthesized literal, so no value can end its literal or change the statement around it:
///
///     let query: PostgresCopyQuery = "SELECT user_id, score FROM scores WHERE board_id = \(boardID)"
///     // SELECT user_id, score FROM scores WHERE board_id = ('42'::int8)
///
/// A `String` variable cannot be passed where a `PostgresCopyQuery` is expected, only a literal, so the SQL
/// itself always comes from source code.
public struct PostgresCopyQuery: Sendable, ExpressibleByStringInterpolation {
    /// The SELECT (or VALUES, TABLE …) whose rows are copied, with the values written in.
    public let sql: String
    /// Why an interpolated value could not be written; the copy then fails before anything is sent.
    let invalidValue: String?

    public init(stringLiteral value: String) {
        sql = value
        invalidValue = nil
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        invalidValue = stringInterpolation.invalidValue
    }

    /// Builds the SQL text; each `appendInterpolation` writes one value as a literal of its PostgreSQL type.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var invalidValue: String?

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + 48 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// An `int8` literal.
        public mutating func appendInterpolation(_ value: Int64) { sql += "('\(value)'::int8)" }
        /// An `int8` literal.
        public mutating func appendInterpolation(_ value: Int) { sql += "('\(value)'::int8)" }
        /// An `int4` literal.
        public mutating func appendInterpolation(_ value: Int32) { sql += "('\(value)'::int4)" }
        /// An `int2` literal.
        public mutating func appendInterpolation(_ value: Int16) { sql += "('\(value)'::int2)" }
        /// A `bool` literal.
        public mutating func appendInterpolation(_ value: Bool) { sql += value ? "(true)" : "(false)" }
        /// A `uuid` literal.
        public mutating func appendInterpolation(_ value: RaveID) { sql += "('\(value)'::uuid)" }

        /// A `timestamptz` literal, exact to the microsecond.
        public mutating func appendInterpolation(_ value: PostgresTimestamp) {
            switch value {
            case .infinity: sql += "('infinity'::timestamptz)"
            case .minusInfinity: sql += "('-infinity'::timestamptz)"
            default:
                sql += "(timestamptz 'epoch' + '\(value.microsecondsSinceEpoch)'::int8 * interval '1 microsecond')"
            }
        }

        /// A `text` literal; a NUL character cannot be sent.
        ///
        /// Written as an escape string (`E'…'`) with quotes and backslashes doubled, so its meaning does not depend
        /// on the server's `standard_conforming_strings`.
        public mutating func appendInterpolation(_ value: String) {
            guard !value.utf8.contains(0) else {
                invalidValue = invalidValue ?? "a text value interpolated into a COPY query contains a NUL character"
                sql += "(NULL::text)"
                return
            }
            var literal = "(E'"
            for character in value.unicodeScalars {
                switch character {
                case "'": literal += "''"
                case "\\": literal += "\\\\"
                default: literal.unicodeScalars.append(character)
                }
            }
            sql += literal + "'::text)"
        }
    }
}

extension PostgresConnection {
    /// Runs `COPY (query) TO STDOUT (FORMAT binary)` and hands `body` the rows in chunks as they arrive; returns
    /// the number of rows copied.
    ///
    /// Uses the connection's default statement timeout; see `copyOut(_:timeout:chunkBytes:_:)`.
    @discardableResult
    public func copyOut(
        _ query: PostgresCopyQuery, chunkBytes: Int = 1 << 20, _ body: (PostgresCopyRows) async throws -> Void
    ) async throws -> Int {
        try await copyOut(query, timeout: defaultTimeout, chunkBytes: chunkBytes, body)
    }

    /// Runs `COPY (query) TO STDOUT (FORMAT binary)` and hands `body` the rows in chunks as they arrive; returns
    /// the number of rows copied.
    ///
    /// The connection's loop moves the server's data into chunks of about `chunkBytes` while `body` works on
    /// earlier ones; when four chunks wait, it stops reading the socket until `body` takes one, so memory stays
    /// bounded however slow `body` is (the server then waits on TCP). Each chunk's rows are read in place (see
    /// `PostgresCopyRows`). `timeout` (nil: none) bounds the whole copy.
    ///
    /// Errors: the server's (a failing expression in some row) as `.server` with its SQLSTATE; data not in the
    /// binary COPY format, or a row count that differs from the server's, as `.malformedData`; a lost connection
    /// as `.connectionFailed` (the pool then drops the connection). When `body` throws, or the task is cancelled,
    /// the COPY is cancelled on the server and the error is rethrown once the connection is past it, so it stays
    /// usable for the next statement.
    @discardableResult
    public func copyOut(
        _ query: PostgresCopyQuery, timeout: Duration?, chunkBytes: Int = 1 << 20,
        _ body: (PostgresCopyRows) async throws -> Void
    ) async throws -> Int {
        if let invalidValue = query.invalidValue { throw PostgresError(.client, invalidValue) }
        let sql = "COPY (\(query.sql)) TO STDOUT (FORMAT binary)"
        let id = nextOperationID()
        let cancelled = PostgresOperation.CancelFlag()
        let loop = self.loop
        let sink = PostgresCopyOutSink(capacity: 4, chunkBytes: max(4096, chunkBytes)) { [self] in
            loop.execute { self.resumeCopyOut(operationID: id) }
        }
        let operation = PostgresOperation(
            id: id, work: .copyOut(sql: sql, sink: sink), timeout: timeout, cancelFlag: cancelled, continuation: nil)
        loop.execute { self.enqueue(operation) }
        var parser = PostgresCopyOutParser()
        do {
            try await withTaskCancellationHandler {
                while let piece = try await sink.next() {
                    let rows = try parser.parse(piece)
                    if rows.count > 0 { try await body(rows) }
                }
            } onCancel: {
                cancelled.set()
                loop.execute {
                    self.cancel(operationID: id, reason: PostgresError(.cancelled, "the task was cancelled"))
                }
            }
            try parser.finish()
            let reported = sink.reportedRowCount
            guard reported == parser.rowCount else {
                throw PostgresError(
                    .malformedData, "the server reported \(reported) rows copied, but \(parser.rowCount) came")
            }
            return parser.rowCount
        } catch {
            // Stop the copy if it still runs, and wait until the connection is past it.
            loop.execute {
                self.cancel(operationID: id, reason: PostgresError(.cancelled, "the COPY's reader stopped"))
            }
            while (try? await sink.next()) != nil {}
            throw error
        }
    }
}

/// Chunks of a COPY's data on their way from the connection's loop (which pushes) to the copying task (which
/// takes them), at most `capacity` waiting.
///
/// When a push fills it, the loop stops reading; the take that makes room calls `resumeProducer`. Once abandoned
/// (the reader stopped, or the copy is being cancelled) it drops what it is given, so the loop reads on to the
/// command's end.
final class PostgresCopyOutSink: Sendable {
    private struct State {
        var chunks: [[UInt8]] = []
        var end: Result<Int, any Error>?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        var producerPaused = false
        var abandoned = false
    }

    let capacity: Int
    let chunkBytes: Int
    private let resumeProducer: @Sendable () -> Void
    private let state = Mutex(State())

    init(capacity: Int, chunkBytes: Int, resumeProducer: @escaping @Sendable () -> Void) {
        self.capacity = max(1, capacity)
        self.chunkBytes = chunkBytes
        self.resumeProducer = resumeProducer
    }

    // MARK: - The loop's side

    /// Hands over a chunk; false when `capacity` chunks now wait: read no more until `resumeProducer` is called.
    func push(_ chunk: [UInt8]) -> Bool {
        let (waiter, keepReading) = state.withLock { state -> (CheckedContinuation<[UInt8]?, any Error>?, Bool) in
            if state.abandoned || state.end != nil { return (nil, true) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, true)
            }
            state.chunks.append(chunk)
            guard state.chunks.count < capacity else {
                state.producerPaused = true
                return (nil, false)
            }
            return (nil, true)
        }
        waiter?.resume(returning: chunk)
        return keepReading
    }

    /// Ends the data: with the row count the server reported, or with the copy's error (dropping waiting chunks).
    func finish(_ result: Result<Int, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = result
            if case .failure = result { state.chunks = [] }
            defer { state.waiter = nil }
            return state.waiter
        }
        // A waiting reader means no chunk was waiting.
        waiter?.resume(with: result.map { _ in nil })
    }

    /// Drops the waiting chunks and every later one, and lets the loop read again.
    func abandon() {
        let paused = state.withLock { state -> Bool in
            state.abandoned = true
            state.chunks = []
            defer { state.producerPaused = false }
            return state.producerPaused
        }
        if paused { resumeProducer() }
    }

    // MARK: - The reader's side

    /// The next chunk; nil once the copy succeeded, its error once it failed.
    func next() async throws -> [UInt8]? {
        enum Step {
            case chunk([UInt8], resumeProducer: Bool)
            case end(Result<Int, any Error>)
            case wait
        }
        return try await withCheckedThrowingContinuation { continuation in
            let step = state.withLock { state -> Step in
                if !state.chunks.isEmpty {
                    let chunk = state.chunks.removeFirst()
                    defer { state.producerPaused = false }
                    return .chunk(chunk, resumeProducer: state.producerPaused)
                }
                if let end = state.end { return .end(end) }
                state.waiter = continuation
                return .wait
            }
            switch step {
            case .chunk(let chunk, let resume):
                if resume { resumeProducer() }
                continuation.resume(returning: chunk)
            case .end(let result): continuation.resume(with: result.map { _ in nil })
            case .wait: break
            }
        }
    }

    /// The row count of the server's command tag, once the copy succeeded.
    var reportedRowCount: Int {
        state.withLock { state in
            guard case .success(let count) = state.end else { return 0 }
            return count
        }
    }
}
