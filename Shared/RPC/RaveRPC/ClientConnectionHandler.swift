import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization

/// The client side of one connection: pending calls by stream id, deadlines, pings, GOAWAY.
///
/// All methods except the atomics' readers run on the channel's event loop.
final class ClientConnectionHandler: ChannelHandler, @unchecked Sendable {
    // @unchecked: mutable fields are confined to the channel's loop; `isUsable` and `serverLimits` are atomics.

    typealias SignalCompletion = CheckedContinuation<Result<Void, RPCError>, Never>

    /// Who hears a call's result: an awaiting Task, or a callback that already runs on the loop.
    enum Completion {
        case continuation(CheckedContinuation<Result<[UInt8], RPCError>, Never>)
        case callback((Result<[UInt8], RPCError>) -> Void)

        func resume(returning result: Result<[UInt8], RPCError>) {
            switch self {
            case .continuation(let continuation): continuation.resume(returning: result)
            case .callback(let callback): callback(result)
            }
        }
    }

    private struct PendingCall {
        var completion: Completion
        /// Monotonic nanoseconds; `deadlines` expires the call once it has passed.
        var deadline: UInt64
    }

    let isUsable = Atomic<Bool>(true)
    let serverLimits = Atomic<UInt32>(0)
    private let logger: Logger
    private var channel: Channel?
    private var decoder = FrameDecoder()
    private var pending: [UInt32: PendingCall] = [:]
    private var deadlines = ConnectionDeadlines()
    private var handshakeResult: Result<Void, RPCError>?
    private var handshakeWaiter: SignalCompletion?
    private var pings: [UInt64: SignalCompletion] = [:]
    private var nextPing: UInt64 = 0
    private var goingAway = false
    private var closed = false
    private var output: [UInt8] = []
    private var flushScheduled = false

    init(logger: Logger) {
        self.logger = logger
    }

    /// Checks this class's threading rule (debug builds only): once the channel is known, every entry point runs
    /// on its loop.
    private func assertOnLoop(_ function: StaticString = #function) {
        assert(channel?.loop.isInLoop ?? true, "ClientConnectionHandler.\(function) must run on the channel's loop")
    }

    // MARK: - Calls

    func start(_ call: OutgoingCall, cancellation: CallCancellation?, completion: Completion) {
        assertOnLoop()
        if let cancellation, cancellation.isCancelled.load(ordering: .acquiring) {
            completion.resume(returning: .failure(RPCError(.cancelled, "the calling task was cancelled")))
            return
        }
        guard let channel, !closed, !goingAway, pending[call.streamID] == nil else {
            completion.resume(
                returning: .failure(.unavailable("the connection is closed or going away", notProcessed: true)))
            return
        }
        let timeout = call.timeout.nanoseconds
        let deadline = channel.loop.now() &+ timeout
        pending[call.streamID] = PendingCall(completion: completion, deadline: deadline)
        if deadlines.needsArming(for: deadline) {
            deadlines.arm(at: deadline, on: channel.loop) { [self] in expireCalls() }
        }
        EnvelopeCodec.appendRequest(
            streamID: call.streamID, method: call.method, timeoutMs: UInt32(clamping: timeout / 1_000_000),
            metadata: call.metadata, encodedMetadata: call.encodedMetadata, payload: call.payload, to: &output)
        scheduleFlush()
    }

    /// Gives up on a call locally and tells the server with CANCEL.
    func cancel(streamID: UInt32, code: StatusCode) {
        assertOnLoop()
        guard let call = pending.removeValue(forKey: streamID) else { return }
        let message =
            code == .deadlineExceeded ? "the call's deadline passed" : "the calling task was cancelled"
        call.completion.resume(returning: .failure(RPCError(code, message)))
        if !closed { send(type: .cancel, streamID: streamID, body: []) }
        closeIfDrained()
    }

    /// Fails the calls whose deadline passed, then arms the connection's timer for the earliest one left.
    private func expireCalls() {
        deadlines.fired()
        let now = channel?.loop.now() ?? monotonicNanoseconds()
        for streamID in ConnectionDeadlines.due(in: pending, now: now, deadline: \.deadline) {
            cancel(streamID: streamID, code: .deadlineExceeded)
        }
        guard !closed, let channel else { return }
        deadlines.arm(forEarliestOf: pending.values.lazy.map(\.deadline), on: channel.loop) { [self] in expireCalls() }
    }

    func ping(_ continuation: SignalCompletion) {
        assertOnLoop()
        guard !closed else {
            continuation.resume(returning: .failure(.unavailable("the connection is closed")))
            return
        }
        nextPing += 1
        pings[nextPing] = continuation
        var body: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: nextPing >> shift)) }
        send(type: .ping, streamID: 0, body: body)
    }

    /// Resumes once the server's HANDSHAKE arrived, or fails after `timeout` nanoseconds without one.
    func waitForHandshake(_ continuation: SignalCompletion, on loop: EventLoop, timeout: UInt64) {
        assert(loop.isInLoop, "waitForHandshake must run on the connection's loop")
        if let handshakeResult {
            continuation.resume(returning: handshakeResult)
            return
        }
        handshakeWaiter = continuation
        loop.scheduleTimer(after: timeout) { [self] in
            guard handshakeResult == nil else { return }
            finishHandshake(.failure(.unavailable("the server sent no protocol handshake in time", notProcessed: true)))
            channel?.closeNow()
        }
    }

    // MARK: - Channel events

    func channelActive(_ channel: Channel) {
        assert(channel.loop.isInLoop, "channel events run on the channel's loop")
        self.channel = channel
        var handshake = RpcV1.Handshake()
        handshake.protocolVersion = Frame.protocolVersion
        handshake.maxFrameSize = UInt32(Frame.defaultMaxFrameSize)
        handshake.agent = "rave-backend/1 client"
        send(type: .handshake, streamID: 0, body: handshake.protobufBytes())
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        assert(channel.loop.isInLoop, "channel events run on the channel's loop")
        guard !closed else { return }
        decoder.append(bytes)
        do {
            while !closed, let frame = try decoder.nextFrame() {
                try frame.validate()
                handle(frame)
            }
        } catch {
            logger.warning("server broke the protocol; closing", [("error", error.message)])
            channel.closeNow()
        }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        assert(channel.loop.isInLoop, "channel events run on the channel's loop")
        closed = true
        isUsable.store(false, ordering: .releasing)
        let reason = error.map { "the connection failed: \($0)" } ?? "the connection closed"
        finishHandshake(.failure(.unavailable(reason, notProcessed: true)))
        let calls = pending
        pending.removeAll()
        deadlines.cancel(on: channel.loop)
        for (_, call) in calls {
            call.completion.resume(returning: .failure(.unavailable(reason)))
        }
        let waiting = pings
        pings.removeAll()
        for (_, ping) in waiting { ping.resume(returning: .failure(.unavailable(reason))) }
    }

    // MARK: - Frames

    private func handle(_ frame: Frame) {
        switch frame.type {
        case .handshake:
            guard let handshake = try? RpcV1.Handshake(protobufBytes: frame.body),
                handshake.protocolVersion == Frame.protocolVersion
            else {
                finishHandshake(.failure(RPCError(.failedPrecondition, "the server speaks another protocol version")))
                channel?.close()
                return
            }
            serverLimits.store(handshake.maxConcurrentStreams, ordering: .releasing)
            if handshake.maxFrameSize > 0 {
                decoder.maxFrameSize = max(decoder.maxFrameSize, Int(handshake.maxFrameSize))
            }
            finishHandshake(.success(()))
        case .response:
            guard let call = pending.removeValue(forKey: frame.streamID) else { return }
            call.completion.resume(returning: Self.result(of: frame.body))
            closeIfDrained()
        case .pong:
            guard frame.body.count == 8 else { return }
            let token = frame.body.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            pings.removeValue(forKey: token)?.resume(returning: .success(()))
        case .ping:
            send(type: .pong, streamID: 0, body: frame.body)
        case .goAway:
            if (try? RpcV1.GoAway(protobufBytes: frame.body)) == nil {
                logger.warning("server sent a GOAWAY that does not parse; closing")
                channel?.closeNow()
            }
            goingAway = true
            isUsable.store(false, ordering: .releasing)
            closeIfDrained()
        case .error:
            let error = try? RpcV1.ProtocolError(protobufBytes: frame.body)
            logger.warning("server closed the connection with an error", [("error", error?.message ?? "")])
            finishHandshake(.failure(RPCError(error?.code ?? .unavailable, error?.message ?? "protocol error")))
            channel?.close()
        case .request, .cancel:
            logger.warning("server sent a \(frame.type) frame; ignoring it")
        }
    }

    private static func result(of body: [UInt8]) -> Result<[UInt8], RPCError> {
        EnvelopeCodec.decodeResponse(body)
    }

    private func finishHandshake(_ result: Result<Void, RPCError>) {
        guard handshakeResult == nil else { return }
        handshakeResult = result
        handshakeWaiter?.resume(returning: result)
        handshakeWaiter = nil
    }

    private func closeIfDrained() {
        if goingAway && pending.isEmpty && !closed { channel?.close() }
    }

    // MARK: - Output

    private func send(type: FrameType, streamID: UInt32, body: [UInt8]) {
        guard channel != nil else { return }
        Frame.appendHeader(type: type, streamID: streamID, bodyCount: body.count, to: &output)
        output.append(contentsOf: body)
        scheduleFlush()
    }

    /// Writes everything appended during this loop iteration at its end: one write (one TLS record when it
    /// fits) for all the calls many clients started on this connection in the iteration.
    private func scheduleFlush() {
        guard let channel, !flushScheduled else { return }
        flushScheduled = true
        channel.loop.executeAtEndOfIteration { [self] in
            flushScheduled = false
            guard !output.isEmpty, !closed else { return }
            channel.write(output)
            output.removeAll(keepingCapacity: true)
            channel.flush()
        }
    }
}
