import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization

/// One multiplexed client connection to a Rave server.
///
/// Calls may be made from any Task, concurrently. Each call has a deadline (CANCEL is sent and
/// DEADLINE_EXCEEDED thrown when it passes); cancelling the calling Task sends CANCEL and throws CANCELLED.
/// When the connection dies every call in flight fails with UNAVAILABLE.
public final class RPCConnection: RPCCaller, Sendable {
    private let handler: ClientConnectionHandler
    private let channel: Channel
    private let nextStreamID = Atomic<UInt32>(0)

    private init(handler: ClientConnectionHandler, channel: Channel) {
        self.handler = handler
        self.channel = channel
    }

    /// Connects, completes TLS and the protocol handshake; on `loop` when given, else on the group's next loop.
    public static func connect(
        host: String, port: Int, tls: TLSContext?, serverName: String? = nil, group: EventLoopGroup,
        on loop: EventLoop? = nil, logger: Logger = Logger(label: "rpc.client")
    ) async throws(RPCError) -> RPCConnection {
        let handler = ClientConnectionHandler(logger: logger.with("peer", "\(host):\(port)"))
        let channel: Channel
        do {
            channel = try await Connector.connect(
                to: host, port: port, on: loop ?? group.next(), tls: tls, serverName: serverName, handler: handler)
        } catch {
            throw .unavailable("cannot connect to \(host):\(port): \(error)", notProcessed: true)
        }
        let loop = channel.loop
        let result = await withCheckedContinuation { continuation in
            loop.execute { handler.waitForHandshake(continuation, on: loop, timeout: 10_000_000_000) }
        }
        try result.get()
        return RPCConnection(handler: handler, channel: channel)
    }

    /// The loop this connection's I/O runs on.
    ///
    /// Tasks that make many calls on the connection run fastest with it as their executor preference (`Task(executorPreference: connection.eventLoop)`): calls then start
    /// and complete without waking another thread.
    public var eventLoop: EventLoop { channel.loop }

    /// Whether new calls can go out on this connection (not closed, no GOAWAY received).
    public var isUsable: Bool { handler.isUsable.load(ordering: .acquiring) }

    /// The server's limits from its handshake.
    public var serverMaxConcurrentStreams: Int { Int(handler.serverLimits.load(ordering: .acquiring)) }

    public func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        guard isUsable else { throw .unavailable("the connection is closed or going away", notProcessed: true) }
        if Task.isCancelled { throw RPCError(.cancelled, "the calling task was cancelled", notProcessed: true) }
        let streamID = allocateStreamID()
        let cancellation = CallCancellation()
        let loop = channel.loop
        let handler = self.handler
        let outgoing = OutgoingCall(
            streamID: streamID, method: method, payload: request, timeout: options.timeout,
            metadata: options.metadata, encodedMetadata: options.encodedMetadata)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // A caller already on the loop (a Task preferring `eventLoop`) starts the call directly.
                if loop.isInLoop {
                    handler.start(outgoing, cancellation: cancellation, completion: .continuation(continuation))
                } else {
                    loop.execute {
                        handler.start(outgoing, cancellation: cancellation, completion: .continuation(continuation))
                    }
                }
            }
        } onCancel: {
            cancellation.isCancelled.store(true, ordering: .releasing)
            loop.execute { handler.cancel(streamID: streamID, code: .cancelled) }
        }
        return try result.get()
    }

    /// Starts a call from the connection's event loop; `completion` runs on the loop with the encoded response.
    ///
    /// For load generators and proxies that already live on the loop: no Task, continuation or thread
    /// hand-off per call. Must be called on `eventLoop`. The call fails with DEADLINE_EXCEEDED after
    /// `options.timeout`, and with UNAVAILABLE if the connection closes first; it is not retried. Returns the
    /// call's stream id, for `cancelStartedCall`.
    @discardableResult
    public func startCall(
        method: String, request: [UInt8], options: CallOptions,
        completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) -> UInt32 {
        precondition(eventLoop.isInLoop, "startCall must run on the connection's event loop")
        let streamID = allocateStreamID()
        guard isUsable else {
            completion(.failure(.unavailable("the connection is closed or going away", notProcessed: true)))
            return streamID
        }
        let outgoing = OutgoingCall(
            streamID: streamID, method: method, payload: request, timeout: options.timeout,
            metadata: options.metadata, encodedMetadata: options.encodedMetadata)
        handler.start(outgoing, cancellation: nil, completion: .callback(completion))
        return streamID
    }

    /// Cancels a call of `startCall`; must be called on `eventLoop`.
    ///
    /// CANCEL goes to the server, and the completion gets CANCELLED if it has not run yet.
    public func cancelStartedCall(streamID: UInt32) {
        precondition(eventLoop.isInLoop, "cancelStartedCall must run on the connection's event loop")
        handler.cancel(streamID: streamID, code: .cancelled)
    }

    /// Sends PING and returns the round trip time.
    public func ping() async throws(RPCError) -> Duration {
        let handler = self.handler
        let started = monotonicNanoseconds()
        let result = await withCheckedContinuation { continuation in
            channel.loop.execute { handler.ping(continuation) }
        }
        try result.get()
        return .nanoseconds(Int64(monotonicNanoseconds() - started))
    }

    /// Closes the connection; calls in flight fail with UNAVAILABLE.
    public func close() {
        let channel = self.channel
        channel.loop.execute { channel.close() }
    }

    /// Stream ids count up from 1 and skip 0 when they wrap; the handler refuses the rare id still in flight.
    private func allocateStreamID() -> UInt32 {
        while true {
            let id = nextStreamID.wrappingAdd(1, ordering: .relaxed).newValue & 0x7FFF_FFFF
            if id != 0 { return id }
        }
    }
}

/// Set by the calling Task's cancellation handler, which may run before the call reaches the loop.
final class CallCancellation: Sendable {
    let isCancelled = Atomic<Bool>(false)
}

/// What a call hands to the connection's loop.
struct OutgoingCall: Sendable {
    var streamID: UInt32
    var method: String
    var payload: [UInt8]
    var timeout: Duration
    var metadata: [String: String]
    var encodedMetadata: EncodedMetadata
}
