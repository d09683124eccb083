import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire

/// The server side of one connection: handshake, stream table, deadlines, drain, idle timeout.
///
/// All methods run on the channel's event loop. Request handlers run as Tasks elsewhere and come back with
/// `loop.execute`; responses are appended to `output` and leave in one flush at the end of the iteration.
final class ServerConnection: ChannelHandler, @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `channel.loop`; other threads reach it via loop.execute.

    private enum State {
        case open
        case goingAway
        case closed
    }

    /// One request being handled; `sequence` tells a late completion from a reused stream id.
    private struct InFlightCall {
        var sequence: UInt64
        var method: String
        /// `method` as metrics name it: from a closed set (see `RPCServerObserver`).
        var label: String
        var requestID: String
        var startedAt: UInt64
        var deadline: UInt64
        var task: Task<Void, Never>?
        /// Cancels a call served by the router's loop fallback (which runs no Task).
        var cancelLoopCall: (() -> Void)?

        func cancelWork() {
            task?.cancel()
            cancelLoopCall?()
        }
    }

    let channel: Channel
    private let router: RPCRouter
    private let registry: ConnectionRegistry
    private let logger: Logger
    private var decoder: FrameDecoder
    private var state = State.open
    /// Whether the client's HANDSHAKE arrived; until then no other frame is allowed.
    private var handshakeReceived = false
    private var calls: [UInt32: InFlightCall] = [:]
    private var nextSequence: UInt64 = 0
    private var highestStreamID: UInt32 = 0
    private var peerMaxFrameSize = Frame.defaultMaxFrameSize
    private var output: [UInt8] = []
    private var flushScheduled = false
    /// The metadata of a recent request and the caller read from it: a gateway sends a player's calls (a batch,
    /// a busy client) with the same entries, and comparing their bytes is much cheaper than decoding them.
    private var knownMetadata: EnvelopeCodec.KnownMetadata?
    private var knownCaller: Caller?
    /// The last caller-scopes value and its parsed set: the gateway's calls for many players mostly carry the same
    /// scopes, so splitting the text and building a set is done when it changes, not per call.
    private var lastScopes: (text: String, scopes: Set<String>)?
    private var deadlines = ConnectionDeadlines()
    private var lastActivity: UInt64 = 0
    private var idleTimer: TimerHandle?
    private var graceTimer: TimerHandle?
    /// Who the peer is, from its verified certificate; set once the channel is active.
    private var peer: PeerIdentity
    /// Closes the connection when its HANDSHAKE frame has not arrived `handshakeTimeout` after activation.
    private var handshakeTimer: TimerHandle?

    // Input accounting (docs/PROTOCOL.md §11): this connection's share of the server's input budget, the size
    // reserved for the large frame being received, and whether it may send frames over the early limit.
    private let inputBudget: InputBudget
    private var inputCharge = 0
    private var largeFrameReservation = 0
    /// True once the peer presented a client certificate or a call other than Health/Check was answered OK.
    private var mayBufferLargeFrames = false
    /// Watches a frame that has begun to arrive; see `RPCServerConfiguration.stalledFrameTimeout`.
    private var stallTimer: TimerHandle?

    /// Metadata larger than this is decoded for every request rather than kept.
    private static let knownMetadataLimit = 4096

    init(channel: Channel, router: RPCRouter, registry: ConnectionRegistry) {
        self.channel = channel
        self.router = router
        self.registry = registry
        self.logger = router.logger.with("peer", channel.remoteAddress)
        let configuration = router.configuration
        self.decoder = FrameDecoder(
            maxFrameSize: configuration.maxFrameSize,
            admissionThreshold: min(configuration.earlyMaxFrameSize, configuration.maxFrameSize))
        self.inputBudget = registry.inputBudget
        self.peer = PeerIdentity(address: channel.remoteAddress, certificateCommonName: nil)
    }

    private var configuration: RPCServerConfiguration { router.configuration }

    // MARK: - Channel events

    func channelActive(_ channel: Channel) {
        peer = PeerIdentity(
            address: channel.remoteAddress, certificateCommonName: channel.peerCertificateCommonName,
            role: PeerRole(certificate: channel.peerCertificate))
        router.observer.connectionCountChanged(to: registry.add(self))
        // The gateway and our services may send large frames at once; a certificate without such a role proves
        // nothing more than a connection without one.
        mayBufferLargeFrames = peer.role == .gateway || peer.role?.serviceName != nil
        let handshakeTimeout = configuration.handshakeTimeout
        handshakeTimer = channel.loop.scheduleTimer(after: handshakeTimeout.nanoseconds) { [self] in
            handshakeTimer = nil
            guard state != .closed, !handshakeReceived else { return }
            failConnection(
                code: .deadlineExceeded, "no HANDSHAKE frame arrived within \(handshakeTimeout) of connecting")
        }
        var handshake = RpcV1.Handshake()
        handshake.protocolVersion = Frame.protocolVersion
        handshake.maxFrameSize = UInt32(clamping: configuration.maxFrameSize)
        handshake.maxConcurrentStreams = UInt32(clamping: configuration.maxConcurrentStreams)
        handshake.agent = configuration.agent
        send(type: .handshake, streamID: 0, body: handshake.protobufBytes())
        lastActivity = monotonicNanoseconds()
        scheduleIdleCheck(at: lastActivity + configuration.idleTimeout.nanoseconds)
        if router.isDraining { startDraining() }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        decoder.append(bytes)
        do {
            try handleBufferedFrames()
        } catch {
            failConnection(code: error.code, error.message)
        }
        settleInputCharge()
    }

    private func handleBufferedFrames() throws(RPCError) {
        while state != .closed {
            let decoded: FrameDecoder.Decoded
            do {
                guard let next = try decoder.next(admitting: admitLargeFrame) else { return }
                decoded = next
            } catch {
                throw .invalidArgument(error.message)
            }
            switch decoded {
            case .frame(let frame):
                // Frames arrive one after another: the one that completes is the one the reservation was for.
                largeFrameReservation = 0
                do { try frame.validate() } catch { throw .invalidArgument(error.message) }
                try handle(frame)
            case .refused(let header):
                try refuse(header)
            }
        }
    }

    func channelReadComplete(_ channel: Channel) {
        lastActivity = monotonicNanoseconds()
        if stallTimer == nil && state != .closed && decoder.hasPartialFrame { scheduleStallCheck() }
    }

    func channelWritabilityChanged(_ channel: Channel) {
        // While the server does not read (back pressure), an unfinished frame is not the client's fault.
        if channel.isWritable { lastActivity = monotonicNanoseconds() }
    }

    // MARK: - Input budget

    /// Whether the frame of `header`, longer than the early limit, may be buffered; reserves its size if so.
    private func admitLargeFrame(_ header: FrameHeader) -> Bool {
        guard mayBufferLargeFrames, handshakeReceived, header.type == .request else { return false }
        let extra = max(0, header.wireSize - inputCharge)
        guard inputBudget.reserve(extra) else { return false }
        inputCharge += extra
        largeFrameReservation = header.wireSize
        return true
    }

    /// Answers a REQUEST the decoder skipped RESOURCE_EXHAUSTED + not processed; any other skipped frame is a
    /// protocol error.
    private func refuse(_ header: FrameHeader) throws(RPCError) {
        let earlyLimit = decoder.admissionThreshold
        guard header.type == .request, handshakeReceived else {
            throw RPCError(
                .resourceExhausted,
                "a \(header.type) frame may be at most \(earlyLimit) bytes long, got \(header.length)")
        }
        guard header.streamID != 0, calls[header.streamID] == nil else {
            throw .invalidArgument("stream id \(header.streamID) is zero or already in flight")
        }
        let message =
            mayBufferLargeFrames
            ? "the server is receiving too many large requests at once (\(inputBudget.limit) bytes); retry shortly"
            : "requests over \(earlyLimit) bytes are accepted once a call on this connection has succeeded; "
                + "this one has \(header.length)"
        reject(
            streamID: header.streamID, method: "", RPCError(.resourceExhausted, message, notProcessed: true))
    }

    /// Brings this connection's share of the input budget in line with what it holds now.
    private func settleInputCharge() {
        guard state != .closed else { return }
        let holding = max(decoder.bufferedByteCount, largeFrameReservation)
        inputBudget.adjust(by: holding - inputCharge)
        inputCharge = holding
    }

    /// Gives the connection's whole share back (it closed).
    private func releaseInput() {
        inputBudget.adjust(by: -inputCharge)
        inputCharge = 0
        largeFrameReservation = 0
    }

    /// Closes the connection when an unfinished frame gets no byte for `stalledFrameTimeout`.
    private func scheduleStallCheck() {
        let timeout = configuration.stalledFrameTimeout
        let deadline = lastActivity + timeout.nanoseconds
        stallTimer = channel.loop.scheduleTimer(at: deadline) { [self] in
            stallTimer = nil
            guard state != .closed, decoder.hasPartialFrame else { return }
            let now = monotonicNanoseconds()
            if !channel.isWritable { lastActivity = now }
            guard now >= lastActivity + timeout.nanoseconds else {
                scheduleStallCheck()
                return
            }
            failConnection(code: .deadlineExceeded, "a frame was left unfinished: no byte of it arrived for \(timeout)")
        }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        state = .closed
        deadlines.cancel(on: channel.loop)
        for (_, call) in calls {
            call.cancelWork()
            // Nobody will hear the answer; count the call as cancelled so in-flight gauges return to zero.
            router.observer.callFinished(
                method: call.label, code: .cancelled, nanoseconds: monotonicNanoseconds() &- call.startedAt)
        }
        calls.removeAll()
        cancelTimers()
        releaseInput()
        router.observer.connectionCountChanged(to: registry.remove(self))
    }

    // MARK: - Frames

    private func handle(_ frame: Frame) throws(RPCError) {
        if !handshakeReceived {
            guard frame.type == .handshake else {
                throw .invalidArgument("the first frame must be HANDSHAKE, got \(frame.type)")
            }
            let handshake: RpcV1.Handshake
            do { handshake = try RpcV1.Handshake(protobufBytes: frame.body) } catch {
                throw .invalidArgument("the handshake does not parse: \(error)")
            }
            guard handshake.protocolVersion == Frame.protocolVersion else {
                throw RPCError(
                    .failedPrecondition,
                    "protocol version \(handshake.protocolVersion) is not supported; this server speaks 1")
            }
            if handshake.maxFrameSize >= UInt32(Frame.headerSize) {
                peerMaxFrameSize = Int(handshake.maxFrameSize)
            }
            handshakeReceived = true
            if let handshakeTimer { channel.loop.cancelTimer(handshakeTimer) }
            handshakeTimer = nil
            return
        }
        switch frame.type {
        case .request:
            try receiveRequest(streamID: frame.streamID, body: frame.body)
        case .cancel:
            cancelCall(streamID: frame.streamID, code: .cancelled, message: "the client cancelled the call")
        case .ping:
            send(type: .pong, streamID: 0, body: frame.body)
        case .pong:
            break
        case .goAway:
            do { _ = try RpcV1.GoAway(protobufBytes: frame.body) } catch {
                throw .invalidArgument("the GOAWAY body does not parse: \(error)")
            }
            // The client leaves: answer what is in flight, then close.
            state = .goingAway
            closeIfDrained()
        case .error:
            logger.warning("peer reported a protocol error", [("body_bytes", String(frame.body.count))])
            closeConnection()
        case .handshake:
            throw .invalidArgument("a second HANDSHAKE frame")
        case .response:
            throw .invalidArgument("a client must not send RESPONSE frames")
        }
    }

    private func receiveRequest(streamID: UInt32, body: [UInt8]) throws(RPCError) {
        guard calls[streamID] == nil else {
            throw .invalidArgument("stream id \(streamID) is already in flight")
        }
        let request: EnvelopeCodec.Request
        let caller: Caller?
        switch EnvelopeCodec.decodeRequest(body, known: knownMetadata) {
        case .success(let decoded):
            request = decoded
            if decoded.reusedKnownMetadata {
                caller = knownCaller
            } else {
                // Caller metadata from a peer not trusted to assert it refuses the call: serving it as anonymous
                // would hide an attack (or a misconfigured peer) behind a confusing answer.
                if Self.carriesCallerMetadata(decoded.metadata) && !router.access.trustsCallerMetadata(from: peer.role)
                {
                    reject(
                        streamID: streamID, method: decoded.method,
                        router.access.callerMetadataRefusal(role: peer.role))
                    return
                }
                caller = trustedCaller(decoded.metadata)
                let entries = decoded.encodedMetadata.bytes
                if !entries.isEmpty && entries.count <= Self.knownMetadataLimit {
                    knownMetadata = EnvelopeCodec.KnownMetadata(bytes: Array(entries), dictionary: decoded.metadata)
                    knownCaller = caller
                }
            }
        case .failure(let error):
            // The stream id is usable, so answer on the stream and keep the connection.
            reject(
                streamID: streamID, method: "",
                RPCError(.invalidArgument, "the request envelope does not parse: \(error.message)"))
            return
        }
        if state == .goingAway {
            reject(
                streamID: streamID, method: request.method,
                .unavailable("the server is draining; retry on another connection", notProcessed: true))
            return
        }
        guard calls.count < configuration.maxConcurrentStreams else {
            reject(
                streamID: streamID, method: request.method,
                RPCError(
                    .resourceExhausted,
                    "at most \(configuration.maxConcurrentStreams) calls may be in flight on one connection",
                    notProcessed: true))
            return
        }
        let served = router.methods[request.method]
        guard let handler = served ?? router.fallback else {
            reject(
                streamID: streamID, method: request.method,
                .unimplemented("method \"\(request.method)\" is not served here"))
            return
        }
        let rule = router.rule(forMethod: request.method)
        guard rule.admits(peer.role) else {
            reject(
                streamID: streamID, method: request.method,
                AccessPolicy.refusal(method: request.method, role: peer.role, rule: rule))
            return
        }
        highestStreamID = max(highestStreamID, streamID)
        // The built-in Health check always runs as written; every other method may be served on the loop.
        start(
            streamID: streamID, request: request, caller: caller, handler: handler,
            loopHandler: request.method == HealthCheck.methodName ? nil : router.loopFallback)
    }

    private func start(
        streamID: UInt32, request: EnvelopeCodec.Request, caller: Caller?, handler: @escaping RPCMethod.Handler,
        loopHandler: RPCLoopHandler?
    ) {
        let label = self.label(of: request.method)
        router.observer.callStarted(method: label)
        let now = monotonicNanoseconds()
        let timeout =
            request.timeoutMs == 0
            ? configuration.defaultTimeout.nanoseconds
            : min(UInt64(request.timeoutMs) * 1_000_000, configuration.maxTimeout.nanoseconds)
        let deadline = now + timeout
        nextSequence += 1
        let sequence = nextSequence
        let requestID = router.nextRequestID()
        calls[streamID] = InFlightCall(
            sequence: sequence, method: request.method, label: label, requestID: requestID, startedAt: now,
            deadline: deadline, task: nil)
        if deadlines.needsArming(for: deadline) {
            deadlines.arm(at: deadline, on: channel.loop) { [self] in expireCalls() }
        }

        let context = RequestContext(
            requestID: requestID, method: request.method, deadline: deadline, metadata: request.metadata,
            peer: peer, caller: caller,
            connectionLogger: logger, encodedMetadata: request.encodedMetadata)
        let loop = channel.loop
        let payload = request.payload
        if let loopHandler {
            let finish = { [self] (result: Result<[UInt8], RPCError>) in
                let response: RpcV1.Response
                switch result {
                case .success(let bytes): response = Self.success(bytes)
                case .failure(let error): response = Self.failure(error, context: context)
                }
                finishCall(streamID: streamID, sequence: sequence, response: response)
            }
            if let cancel = loopHandler(payload, context, loop, finish) {
                // The completion may already have run; then the call is gone and this does nothing.
                calls[streamID]?.cancelLoopCall = cancel
                return
            }
        }
        let operation: @Sendable () async -> Void = { [self] in
            let response: RpcV1.Response
            do {
                response = Self.success(try await handler(payload, context))
            } catch {
                response = Self.failure(error, context: context)
            }
            if loop.isInLoop {
                finishCall(streamID: streamID, sequence: sequence, response: response)
            } else {
                loop.execute { self.finishCall(streamID: streamID, sequence: sequence, response: response) }
            }
        }
        guard configuration.runsHandlersOnEventLoop else {
            calls[streamID]?.task = Task(operation: operation)
            return
        }
        // The handler starts right here on the loop thread and, if it suspends, resumes on the loop: no wake-up
        // of another thread to start the call or to hand the response back, and no trip through the loop's job
        // queue. A handler that never suspends has answered before this returns, and its call is gone then.
        // (Made before the assignment: the handler may already change `calls`.)
        let task = Task.immediateDetached(executorPreference: loop, operation: operation)
        calls[streamID]?.task = task
    }

    private static func success(_ payload: [UInt8]) -> RpcV1.Response {
        RpcV1.Response(code: .ok, message: "", details: [], notProcessed: false, payload: payload)
    }

    private static func failure(_ error: any Error, context: RequestContext) -> RpcV1.Response {
        let status = RPCError(mapping: error, requestID: context.requestID)
        if status.code == .internal {
            context.logger.error("handler failed", [("error", String(describing: error))])
        }
        return RpcV1.Response(
            code: status.code, message: status.message, details: status.details,
            notProcessed: status.notProcessed, payload: [])
    }

    /// The caller from metadata; the caller was already refused when its peer may not assert one.
    private func trustedCaller(_ metadata: [String: String]) -> Caller? {
        guard let userID = metadata[MetadataKey.callerUserID] ?? metadata[MetadataKey.callerAppID].map({ _ in "" })
        else { return nil }
        let text = metadata[MetadataKey.callerScopes] ?? ""
        let scopes: Set<String>
        if let lastScopes, lastScopes.text == text {
            scopes = lastScopes.scopes
        } else {
            scopes = Set(text.split(separator: " ").map(String.init))
            lastScopes = (text, scopes)
        }
        return Caller(
            userID: userID, appID: metadata[MetadataKey.callerAppID] ?? "",
            sessionID: metadata[MetadataKey.callerSessionID] ?? "", scopes: scopes)
    }

    /// Whether `metadata` asserts anything only the gateway may assert.
    private static func carriesCallerMetadata(_ metadata: [String: String]) -> Bool {
        guard !metadata.isEmpty else { return false }
        return MetadataKey.callerAssertions.contains { metadata[$0] != nil }
    }

    // MARK: - Completion

    private func finishCall(streamID: UInt32, sequence: UInt64, response: RpcV1.Response) {
        guard let call = calls[streamID], call.sequence == sequence else { return }
        calls[streamID] = nil
        complete(streamID: streamID, call: call, response: response)
    }

    /// Answers DEADLINE_EXCEEDED for the calls whose deadline passed, then arms the connection's timer for the
    /// earliest deadline left.
    private func expireCalls() {
        deadlines.fired()
        for streamID in ConnectionDeadlines.due(in: calls, deadline: \.deadline) {
            cancelCall(
                streamID: streamID, code: .deadlineExceeded, message: "the deadline passed before the call finished")
        }
        guard state != .closed else { return }
        deadlines.arm(forEarliestOf: calls.values.lazy.map(\.deadline), on: channel.loop) { [self] in expireCalls() }
    }

    private func cancelCall(streamID: UInt32, code: StatusCode, message: String) {
        guard let call = calls.removeValue(forKey: streamID) else { return }
        call.cancelWork()
        complete(
            streamID: streamID, call: call,
            response: RpcV1.Response(code: code, message: message, details: [], notProcessed: false, payload: []))
    }

    private func complete(streamID: UInt32, call: InFlightCall, response: RpcV1.Response) {
        let elapsed = monotonicNanoseconds() &- call.startedAt
        router.observer.callFinished(method: call.label, code: response.code, nanoseconds: elapsed)
        logger.log(
            configuration.requestLogLevel, "call finished",
            [
                ("method", MethodNames.printable(call.method)), ("status", "\(response.code)"),
                ("latency_us", String(elapsed / 1000)), ("request_id", call.requestID),
            ])
        if response.code == .ok && !mayBufferLargeFrames && call.method != HealthCheck.methodName {
            mayBufferLargeFrames = true
        }
        guard state != .closed else { return }
        sendResponse(streamID: streamID, response)
        closeIfDrained()
    }

    private func reject(streamID: UInt32, method: String, _ error: RPCError) {
        let label = self.label(of: method)
        router.observer.callStarted(method: label)
        router.observer.callFinished(method: label, code: error.code, nanoseconds: 0)
        sendResponse(
            streamID: streamID,
            RpcV1.Response(
                code: error.code, message: error.message, details: error.details, notProcessed: error.notProcessed,
                payload: []))
    }

    /// The metric label of `method`: its name when the server serves it or the fallback lists it, else
    /// `unknownMethodLabel`, so no client can add series by inventing names.
    private func label(of method: String) -> String {
        router.methods[method] != nil || configuration.fallbackMethodNames.contains(method)
            ? method : RPCServerConfiguration.unknownMethodLabel
    }

    // MARK: - Output

    /// Appends a RESPONSE, or RESOURCE_EXHAUSTED in its place when it would not fit the client's frame limit.
    private func sendResponse(streamID: UInt32, _ response: RpcV1.Response) {
        let size = EnvelopeCodec.responseBodySize(
            code: response.code, message: response.message, details: response.details,
            notProcessed: response.notProcessed, payload: response.payload)
        if Frame.headerSize + size > peerMaxFrameSize {
            EnvelopeCodec.appendResponse(
                streamID: streamID, code: .resourceExhausted,
                message: "the response (\(size) bytes) exceeds the client's maximum frame size", details: [],
                notProcessed: false, payload: [], to: &output)
        } else {
            EnvelopeCodec.appendResponse(
                streamID: streamID, code: response.code, message: response.message, details: response.details,
                notProcessed: response.notProcessed, payload: response.payload, to: &output)
        }
        scheduleFlush()
    }

    private func send(type: FrameType, streamID: UInt32, body: [UInt8]) {
        Frame.appendHeader(type: type, streamID: streamID, bodyCount: body.count, to: &output)
        output.append(contentsOf: body)
        scheduleFlush()
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        channel.loop.executeAtEndOfIteration { [self] in flushOutput() }
    }

    private func flushOutput() {
        flushScheduled = false
        guard !output.isEmpty, state != .closed else { return }
        channel.write(output)
        output.removeAll(keepingCapacity: true)
        channel.flush()
    }

    // MARK: - Drain, idle, errors

    /// Sends GOAWAY; in-flight calls finish, later requests are refused, the connection closes when idle.
    func startDraining() {
        guard state == .open else { return }
        state = .goingAway
        var goAway = RpcV1.GoAway()
        goAway.lastStreamId = highestStreamID
        goAway.reason = "server draining"
        send(type: .goAway, streamID: 0, body: goAway.protobufBytes())
        graceTimer = channel.loop.scheduleTimer(after: configuration.drainGracePeriod.nanoseconds) { [self] in
            graceTimer = nil
            logger.warning(
                "drain grace period over; answering the calls still running UNAVAILABLE",
                [("calls", String(calls.count))])
            // Each call still running gets an answer (it may have had an effect, so not "not processed"); the
            // last answer closes the connection.
            for streamID in Array(calls.keys) {
                cancelCall(
                    streamID: streamID, code: .unavailable,
                    message: "the server shut down before the call finished (drain grace period over)")
            }
            closeConnection()
        }
        closeIfDrained()
    }

    private func closeIfDrained() {
        if state == .goingAway && calls.isEmpty { closeConnection() }
    }

    private func scheduleIdleCheck(at deadline: UInt64) {
        idleTimer = channel.loop.scheduleTimer(at: deadline) { [self] in
            guard state != .closed else { return }
            let idleUntil = lastActivity + configuration.idleTimeout.nanoseconds
            if calls.isEmpty && monotonicNanoseconds() >= idleUntil {
                logger.debug("closing idle connection")
                startDraining()
            } else {
                scheduleIdleCheck(
                    at: max(idleUntil, monotonicNanoseconds() + configuration.idleTimeout.nanoseconds / 4))
            }
        }
    }

    private func failConnection(code: StatusCode, _ message: String) {
        logger.warning("protocol error; closing the connection", [("error", message)])
        var error = RpcV1.ProtocolError()
        error.code = code
        error.message = message
        send(type: .error, streamID: 0, body: error.protobufBytes())
        closeConnection()
    }

    private func closeConnection() {
        guard state != .closed else { return }
        if !output.isEmpty {
            channel.write(output)
            output.removeAll()
        }
        state = .closed
        deadlines.cancel(on: channel.loop)
        for (_, call) in calls {
            call.cancelWork()
            // Nobody will hear the answer; count the call as cancelled so in-flight gauges return to zero.
            router.observer.callFinished(
                method: call.label, code: .cancelled, nanoseconds: monotonicNanoseconds() &- call.startedAt)
        }
        calls.removeAll()
        cancelTimers()
        releaseInput()
        channel.close()
    }

    private func cancelTimers() {
        for timer in [idleTimer, graceTimer, handshakeTimer, stallTimer] {
            if let timer { channel.loop.cancelTimer(timer) }
        }
        idleTimer = nil
        graceTimer = nil
        handshakeTimer = nil
        stallTimer = nil
    }
}
