import RaveRPC
import RaveServices
import RaveTransport
import Synchronization

/// One connection's share of `ravectl bench rpc`: `chains` calls kept in flight, each call started from the
/// completion of the one before, all on the connection's event loop.
///
/// No Task, continuation or thread hand-off per call: the load generator shares the machine's cores with
/// the server it measures, so it should cost as little as a lean client can.
final class ConnectionLoad: @unchecked Sendable {
    // @unchecked: the mutable fields are touched only on `connection.eventLoop` (`run` hops there first).

    static let echoMethod = "rave.echo.v1.Echo/Echo"

    private let connection: RPCConnection
    private let payload: [UInt8]
    private let end: UInt64
    private let completed: CallCounter
    private var histogram = LatencyHistogram()
    private var errors = 0
    private var runningChains = 0
    private var unreported = 0
    private var finished: CheckedContinuation<(LatencyHistogram, Int), Never>?

    init(connection: RPCConnection, payload: [UInt8], end: UInt64, completed: CallCounter) {
        self.connection = connection
        self.payload = payload
        self.end = end
        self.completed = completed
    }

    /// Runs the chains until `end`; returns the latencies of the successful calls and the failure count.
    func run(chains: Int) async -> (LatencyHistogram, Int) {
        await withCheckedContinuation { continuation in
            connection.eventLoop.execute { [self] in
                finished = continuation
                runningChains = chains
                for _ in 0..<chains { callNext() }
            }
        }
    }

    private func callNext() {
        let before = monotonicNanoseconds()
        guard before < end else { return chainEnded() }
        // Encoded per call, as a real client would.
        let request = EchoV1.EchoRequest(payload: payload).protobufBytes()
        connection.startCall(method: Self.echoMethod, request: request, options: CallOptions()) { [self] result in
            let echoed = try? EchoV1.EchoResponse(protobufBytes: result.get())
            if echoed?.payload.count == payload.count {
                histogram.record(microseconds: (monotonicNanoseconds() - before) / 1000)
            } else {
                errors += 1
            }
            unreported += 1
            // Batched so the loops don't contend on one cache line per call.
            if unreported == 64 { flushCount() }
            // A dead connection fails every call at once; retrying would only spin.
            if connection.isUsable { callNext() } else { chainEnded() }
        }
    }

    private func flushCount() {
        completed.value.add(unreported, ordering: .relaxed)
        unreported = 0
    }

    private func chainEnded() {
        runningChains -= 1
        guard runningChains == 0 else { return }
        flushCount()
        finished?.resume(returning: (histogram, errors))
        finished = nil
    }
}

/// Calls completed so far, shared by the load and the progress printer.
final class CallCounter: Sendable {
    let value = Atomic<Int>(0)
}
