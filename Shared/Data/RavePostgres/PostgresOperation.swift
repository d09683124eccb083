import RaveTransport
import Synchronization

/// One queued call on a connection: what to send, what came back, and who is waiting.
final class PostgresOperation: @unchecked Sendable {
    // @unchecked: created by the calling task, then read and mutated only on the connection's loop.

    enum Work {
        case query(PostgresQuery)
        case script(String)
        case prepared(PostgresStatement, [PostgresValue?])
        case pipeline([PostgresQuery])
        case preparedPipeline(PostgresStatement, [[PostgresValue?]])
        /// One execution per row, a pipeline sync (own transaction) every `batchSize` rows.
        case preparedBatches(PostgresStatement, PostgresParameterBatch, batchSize: Int)
        case copy(sql: String, chunks: [[UInt8]])
        /// A `COPY … TO STDOUT`: its data goes to the sink as it arrives, and so does its end (no continuation).
        case copyOut(sql: String, sink: PostgresCopyOutSink)
    }

    /// Where a `.preparedBatches` operation is: rows sent, batches in flight, rows committed.
    struct BatchProgress {
        var nextRow = 0
        var syncsSent = 0
        var syncsReceived = 0
        /// Rows touched by the batches that committed.
        var committedRows = 0
        /// Rows touched so far by the batch whose results are being read; counted once its sync arrives.
        var currentBatchRows = 0
        var currentBatchFailed = false
        /// Set at the first error: no further batch is sent.
        var stopped = false
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
    /// A command the connection sends ahead of the caller's to keep its statement cache in step with the server.
    enum HiddenCommand {
        /// Makes room in the cache; if it fails the statement is still prepared there.
        case deallocate(String)
        /// Prepares a statement, cached once the server confirms it.
        case prepare(String)
    }

    /// Leading pipeline commands whose results are ours, not the caller's.
    var hiddenCommands: [HiddenCommand] = []
    var hiddenCommandCount: Int { hiddenCommands.count }
    var commandIndex = 0
    var copying = false
    var copyChunk = 0
    /// COPY OUT data not yet handed to the sink.
    var copyOutBuffer: [UInt8] = []
    /// Whether the loop stopped reading because the sink is full.
    var copyOutPaused = false
    var batchProgress: BatchProgress?
    var results: [PostgresRows] = []
    var error: PostgresError?

    init(
        id: UInt64, work: Work, timeout: Duration?, cancelFlag: CancelFlag,
        continuation: CheckedContinuation<[PostgresRows], any Error>?
    ) {
        self.id = id
        self.work = work
        self.timeout = timeout
        self.cancelFlag = cancelFlag
        self.continuation = continuation
    }

    func finish(_ result: Result<[PostgresRows], any Error>) {
        if case .copyOut(_, let sink) = work { sink.finish(result.map { $0.last?.affectedRowCount ?? 0 }) }
        continuation?.resume(with: result)
        continuation = nil
    }
}
