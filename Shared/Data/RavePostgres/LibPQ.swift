import CLibPQ
import Foundation

/// What `PQconnectPoll` wants next.
enum ConnectProgress {
    case waitReadable
    case waitWritable
    case connected
    case failed(String)
}

/// What `PQgetCopyData` did.
enum CopyDataProgress {
    /// A message of data was appended.
    case data
    /// No whole message is buffered: wait until the socket is readable.
    case waitReadable
    /// The data ended; the command's result follows (`nextResult`).
    case ended
    case failed(String)
}

/// What `PQflush` or `PQputCopyData` did.
enum SendProgress {
    case done
    case waitWritable
    case failed(String)
}

/// One result libpq handed back, already copied out of its `PGresult`.
enum LibPQResult {
    case rows(PostgresRows)
    /// A successful command whose rows were not wanted: only how many it touched (`PQcmdTuples`).
    case command(affectedRows: Int)
    case error(PostgresError)
    case copyIn
    case copyOut
    case pipelineSync
    case pipelineAborted
}

/// An asynchronous notification (NOTIFY) received on a connection.
public struct PostgresNotification: Sendable, Hashable {
    public var channel: String
    public var payload: String
    /// The process id of the server backend that sent it.
    public var senderProcessID: Int32
}

/// Owns one libpq `PGconn`; every libpq call in the module goes through here so C types stay in this file.
///
/// Not thread-safe: the owning `PostgresConnection` calls it only on its event loop.
final class LibPQConnection {
    private let connection: OpaquePointer

    /// Starts a non-blocking connection attempt (`PQconnectStart`); drive it with `connectPoll()`.
    init(connectionString: String) throws {
        guard let connection = PQconnectStart(connectionString) else {
            throw PostgresError(.client, "libpq could not allocate a connection")
        }
        // Checked before `self.connection` is set: a throw after that would run `deinit`, finishing it twice.
        if PQstatus(connection) == CONNECTION_BAD {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(.client, "the connection failed at once: \(message)")
        }
        self.connection = connection
    }

    deinit { PQfinish(connection) }

    var socket: Int32 { PQsocket(connection) }
    var isBad: Bool { PQstatus(connection) == CONNECTION_BAD }
    var errorMessage: String { Self.trimmed(PQerrorMessage(connection)) }
    var isBusy: Bool { PQisBusy(connection) != 0 }
    var backendProcessID: Int32 { PQbackendPID(connection) }

    func connectPoll() -> ConnectProgress {
        switch PQconnectPoll(connection) {
        case PGRES_POLLING_READING: return .waitReadable
        case PGRES_POLLING_WRITING: return .waitWritable
        case PGRES_POLLING_OK:
            if PQsetnonblocking(connection, 1) != 0 { return .failed(errorMessage) }
            return .connected
        default: return .failed(errorMessage)
        }
    }

    // MARK: - Sending

    /// Simple-query protocol: may hold several statements; results come back in text format.
    func sendScript(_ sql: String) -> Bool { PQsendQuery(connection, sql) == 1 }

    func sendQuery(_ sql: String, _ parameters: [PostgresValue?]) -> Bool {
        withParameters(parameters) { count, types, values, lengths, formats in
            PQsendQueryParams(connection, sql, count, types, values, lengths, formats, 1) == 1
        }
    }

    func sendPrepare(name: String, sql: String, _ parameters: [PostgresValue?]) -> Bool {
        sendPrepare(name: name, sql: sql, types: parameters.map { $0?.type.oid ?? 0 })
    }

    func sendPrepare(name: String, sql: String, types: [UInt32]) -> Bool {
        PQsendPrepare(connection, name, sql, Int32(types.count), types) == 1
    }

    func sendPrepared(name: String, _ parameters: [PostgresValue?]) -> Bool {
        withParameters(parameters) { count, _, values, lengths, formats in
            PQsendQueryPrepared(connection, name, count, values, lengths, formats, 1) == 1
        }
    }

    /// Queues `rows` of `batch` as executions of the prepared statement `name`, copying each row's parameters
    /// straight from the batch's buffer: no per-statement arrays.
    func sendPrepared(name: String, _ batch: PostgresParameterBatch, rows: Range<Int>) -> Bool {
        let columns = batch.columnCount
        let formats = [Int32](repeating: 1, count: max(1, columns))
        var values = [UnsafePointer<CChar>?](repeating: nil, count: max(1, columns))
        return name.withCString { name in
            batch.bytes.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { bytes in
                    batch.lengths.withUnsafeBufferPointer { lengths in
                        for row in rows {
                            let first = row * columns
                            for column in 0..<columns {
                                let cell = first + column
                                values[column] =
                                    lengths[cell] < 0 ? nil : bytes.baseAddress.map { $0 + Int(batch.offsets[cell]) }
                            }
                            let sent = PQsendQueryPrepared(
                                connection, name, Int32(columns), values, lengths.baseAddress.map { $0 + first },
                                formats, 1)
                            if sent != 1 { return false }
                        }
                        return true
                    }
                }
            }
        }
    }

    func enterPipelineMode() -> Bool { PQenterPipelineMode(connection) == 1 }
    func exitPipelineMode() -> Bool { PQexitPipelineMode(connection) == 1 }
    func pipelineSync() -> Bool { PQpipelineSync(connection) == 1 }

    func flush() -> SendProgress {
        switch PQflush(connection) {
        case 0: return .done
        case 1: return .waitWritable
        default: return .failed(errorMessage)
        }
    }

    func putCopyData(_ bytes: [UInt8]) -> SendProgress {
        let result = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(connection, $0.baseAddress, Int32($0.count)) }
        }
        switch result {
        case 1: return .done
        case 0: return .waitWritable
        default: return .failed(errorMessage)
        }
    }

    func putCopyEnd(failure: String?) -> SendProgress {
        switch PQputCopyEnd(connection, failure) {
        case 1: return .done
        case 0: return .waitWritable
        default: return .failed(errorMessage)
        }
    }

    // MARK: - Receiving

    /// Appends the next message of a COPY OUT's data to `buffer` without blocking (`PQgetCopyData` in async mode).
    func getCopyData(appendingTo buffer: inout [UInt8]) -> CopyDataProgress {
        var message: UnsafeMutablePointer<CChar>?
        let length = PQgetCopyData(connection, &message, 1)
        if length > 0, let message {
            // A typed buffer pointer, which appends with one memcpy (a raw one would go byte by byte).
            message.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                buffer.append(contentsOf: UnsafeBufferPointer(start: $0, count: Int(length)))
            }
            PQfreemem(message)
            return .data
        }
        switch length {
        case 0: return .waitReadable
        case -1: return .ended
        default: return .failed(errorMessage)
        }
    }

    /// Reads what the socket has; false when the connection is broken.
    func consumeInput() -> Bool { PQconsumeInput(connection) == 1 }

    /// The next result, or nil at the end of one command's results (`PQgetResult` returning NULL).
    ///
    /// With `keepingRows` false a successful command comes back as `.command`, without copying its rows out.
    func nextResult(keepingRows: Bool = true) -> LibPQResult? {
        guard let result = PQgetResult(connection) else { return nil }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            guard keepingRows else { return .command(affectedRows: Self.affectedRows(result)) }
            return .rows(Self.rows(result))
        case PGRES_COPY_IN: return .copyIn
        case PGRES_COPY_OUT: return .copyOut
        case PGRES_PIPELINE_SYNC: return .pipelineSync
        case PGRES_PIPELINE_ABORTED: return .pipelineAborted
        default: return .error(error(result))
        }
    }

    func notifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notify = PQnotifies(connection) {
            let payload = notify.pointee.extra.map { String(cString: $0) } ?? ""
            received.append(
                PostgresNotification(
                    channel: String(cString: notify.pointee.relname), payload: payload,
                    senderProcessID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    /// A token to cancel this connection's running statement from another thread.
    func makeCancelRequest() -> PostgresCancelRequest? {
        PQgetCancel(connection).map(PostgresCancelRequest.init)
    }

    // MARK: - Conversion

    private func error(_ result: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue ?? 0)).map { String(cString: $0) }
        }
        let sqlState = field("C")
        guard let sqlState else {
            // No SQLSTATE: libpq itself failed, almost always because the connection broke.
            var message = Self.trimmed(PQresultErrorMessage(result))
            if message.isEmpty { message = errorMessage }
            return PostgresError(.connectionFailed, message.isEmpty ? "the database connection was lost" : message)
        }
        return PostgresError(
            .server, field("M") ?? "unknown server error", sqlState: sqlState, detail: field("D"),
            constraint: field("n"))
    }

    /// `PQcmdTuples` ("1" after a one-row INSERT) read without building a String.
    private static func affectedRows(_ result: OpaquePointer) -> Int {
        guard var digit = PQcmdTuples(result) else { return 0 }
        var count = 0
        while digit.pointee >= 48, digit.pointee <= 57 {  // "0"..."9"
            count = count * 10 + Int(digit.pointee - 48)
            digit += 1
        }
        return count
    }

    private static func rows(_ result: OpaquePointer) -> PostgresRows {
        let fieldCount = PQnfields(result)
        let rowCount = PQntuples(result)
        var columns: [PostgresColumn] = []
        columns.reserveCapacity(Int(fieldCount))
        for field in 0..<fieldCount {
            columns.append(
                PostgresColumn(
                    name: String(cString: PQfname(result, field)), type: PostgresType(oid: PQftype(result, field))))
        }
        var storage: [UInt8] = []
        var cells: [(start: Int32, length: Int32)] = []
        cells.reserveCapacity(Int(fieldCount * rowCount))
        for row in 0..<rowCount {
            for field in 0..<fieldCount {
                if PQgetisnull(result, row, field) == 1 {
                    cells.append((0, -1))
                    continue
                }
                let length = PQgetlength(result, row, field)
                cells.append((Int32(storage.count), length))
                if length > 0, let value = PQgetvalue(result, row, field) {
                    value.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                        storage.append(contentsOf: UnsafeBufferPointer(start: $0, count: Int(length)))
                    }
                }
            }
        }
        let tag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
        return PostgresRows(columns: columns, commandTag: tag, storage: storage, cells: cells)
    }

    /// Lays parameters out the way `PQsendQueryParams` wants: parallel C arrays, all in binary format.
    ///
    /// The arrays are temporary allocations (on the stack when small): sending a statement allocates nothing.
    private func withParameters(
        _ parameters: [PostgresValue?],
        _ body: (
            Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) -> Bool
    ) -> Bool {
        let count = parameters.count
        if count == 0 { return body(0, nil, nil, nil, nil) }
        var byteCount = 0
        for parameter in parameters { byteCount += parameter?.bytes.count ?? 0 }
        // Lengths in the first half, formats (all 1: binary) in the second.
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * count) { integers in
            withUnsafeTemporaryAllocation(of: Oid.self, capacity: count) { types in
                withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { values in
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, byteCount)) { storage in
                        guard let base = storage.baseAddress else { return false }
                        var offset = 0
                        for (index, parameter) in parameters.enumerated() {
                            types[index] = parameter?.type.oid ?? 0
                            integers[count + index] = 1
                            guard let bytes = parameter?.bytes else {
                                integers[index] = 0
                                values[index] = nil
                                continue
                            }
                            bytes.withUnsafeBufferPointer { source in
                                if let address = source.baseAddress {
                                    (base + offset).initialize(from: address, count: source.count)
                                }
                            }
                            integers[index] = Int32(bytes.count)
                            values[index] = UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self)
                            offset += bytes.count
                        }
                        return body(
                            Int32(count), UnsafePointer(types.baseAddress), UnsafePointer(values.baseAddress),
                            UnsafePointer(integers.baseAddress), UnsafePointer(integers.baseAddress.map { $0 + count }))
                    }
                }
            }
        }
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A libpq cancel token (`PGcancel`); `send()` blocks, so it runs on a thread of its own.
final class PostgresCancelRequest: @unchecked Sendable {
    // @unchecked: PQcancel is documented thread-safe, and the token is never mutated after creation.
    private let token: OpaquePointer

    init(_ token: OpaquePointer) { self.token = token }

    deinit { PQfreeCancel(token) }

    /// Asks the server, over a separate connection, to cancel the running statement; never blocks the caller.
    func sendInBackground() {
        let thread = Thread { [self] in
            var buffer = [CChar](repeating: 0, count: 256)
            _ = PQcancel(token, &buffer, Int32(buffer.count))
        }
        thread.name = "rave-pg-cancel"
        thread.start()
    }
}
