import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire

/// The server side of one connection: carries out what its `ServerConnectionStateMachine` decides on the channel.
///
/// The machine keeps the protocol's state (handshake, stream table, drain, deadlines, idle and stalled frames,
/// the input budget share); this class decodes frames and envelopes, routes calls, starts handlers, keeps
/// metrics and logs, and owns the channel, the timers and the output buffer.
///
/// All methods run on the channel's event loop (asserted). A synchronous handler or a fast path (`RPCMethod.fastPath`)
/// is called in place; other handlers, and calls a fast path declines, run as Tasks (on the loop, or elsewhere and
/// back with `loop.execute`).
/// Responses are appended to `output` and leave in one flush at the end of the iteration.
final class ServerConnection: ChannelHandler, @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `channel.loop`; other threads reach it via loop.execute.

    typealias Machine = ServerConnectionStateMachine<InFlightCall>

    /// What the connection keeps for a call in flight (the machine keeps its stream id, sequence and deadline).
    struct InFlightCall {
        var method: String
        /// `method` as metrics name it: from a closed set (see `RPCServerObserver`).
        var label: String
        /// Its request id's number (`ConnectionFacts.requestID(number:)` spells it).
        var requestNumber: UInt64
        var startedAt: UInt64
        /// An OK answer is logged at debug (a method peers poll; `RPCServerConfiguration.quietMethods`).
        var quietWhenOK = false
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
    private var machine: Machine
    private var timers: [TimerHandle?] = Array(repeating: nil, count: Machine.Timer.allCases.count)
    private var output: [UInt8] = []
    private var flushScheduled = false
    /// The metadata of a recent request and the caller read from it: a gateway sends a player's calls (a batch,
    /// a busy client) with the same entries, and comparing their bytes is much cheaper than reading them.
    private var knownMetadata: KnownMetadata?
    /// Request numbers this connection reserved from the server's counter (`RPCRouter.reserveRequestNumbers`):
    /// the next one, and how many are left.
    private var nextRequestNumber: UInt64 = 0
    private var requestNumbersLeft: UInt64 = 0
    /// When the bytes being handled were read: the start of every call they carry, and what its deadline counts
    /// from (one clock read per read, not one per call).
    private var readTime: UInt64 = 0
    /// The last caller-scopes value and its parsed set: the gateway's calls for many players mostly carry the same
    /// scopes, so splitting the text and building a set is done when it changes, not per call.
    private var lastScopes: (text: String, scopes: Set<String>)?
    /// Who the peer is, from its verified certificate; set once the channel is active.
    private var peer: PeerIdentity {
        didSet { facts = facts.with(peer: peer) }
    }
    /// The peer, the logger and the request ids' prefix as every call's `RequestContext` shares them.
    private var facts: ConnectionFacts
    /// The server's input budget this connection takes its share of (docs/PROTOCOL.md §11).
    private let inputBudget: InputBudget

    /// `configuration.runsHandlersOnEventLoop` and `.requestLogLevel`, read per call: kept here rather than read
    /// through the router each time.
    private let runsHandlersOnEventLoop: Bool
    /// `router.observer`, called twice per call: kept here rather than copied out of the router each time.
    private let observer: any RPCServerObserver
    private let requestLogLevel: Logger.Level

    /// Metadata larger than this is read for every request rather than kept.
    private static let knownMetadataLimit = 4096
    /// Request numbers reserved at a time.
    private static let requestNumberBlock: UInt64 = 256

    /// Metadata entries a connection read, kept for later requests that carry the same bytes.
    struct KnownMetadata {
        /// The entries (`metadata.encoded`: their own copy, as the request body they came from goes).
        var metadata: RequestMetadata
        var caller: Caller?

        /// Whether `entries` are exactly these bytes.
        func matches(_ entries: UnsafeRawBufferPointer) -> Bool {
            metadata.encoded.bytes.withUnsafeBytes { EnvelopeCodec.sameBytes($0, entries) }
        }
    }

    init(channel: Channel, router: RPCRouter, registry: ConnectionRegistry) {
        self.channel = channel
        self.router = router
        self.registry = registry
        self.logger = router.logger.with("peer", channel.remoteAddress)
        let configuration = router.configuration
        self.decoder = FrameDecoder(
            maxFrameSize: configuration.maxFrameSize,
            admissionThreshold: min(configuration.earlyMaxFrameSize, configuration.maxFrameSize))
        self.machine = Machine(settings: Machine.Settings(configuration))
        self.runsHandlersOnEventLoop = configuration.runsHandlersOnEventLoop
        self.observer = router.observer
        self.requestLogLevel = configuration.requestLogLevel
        self.inputBudget = registry.inputBudget
        let peer = PeerIdentity(address: channel.remoteAddress, certificateCommonName: nil)
        self.peer = peer
        self.facts = ConnectionFacts(peer: peer, logger: logger, requestIDPrefix: router.requestIDPrefix)
    }

    private var configuration: RPCServerConfiguration { router.configuration }

    // MARK: - Channel events

    func channelActive(_ channel: Channel) {
        assert(channel.loop.isInLoop, "ServerConnection runs on its channel's loop")
        peer = PeerIdentity(
            address: channel.remoteAddress, certificateCommonName: channel.peerCertificateCommonName,
            role: PeerRole(certificate: channel.peerCertificate))
        observer.connectionCountChanged(to: registry.add(self))
        // The gateway and our services may send large frames at once; a certificate without such a role proves
        // nothing more than a connection without one.
        let trusted = peer.role == .gateway || peer.role?.serviceName != nil
        perform(machine.activated(now: channel.loop.now(), trustedPeer: trusted, draining: router.isDraining))
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        assert(channel.loop.isInLoop, "ServerConnection runs on its channel's loop")
        guard !machine.isClosed else { return }
        readTime = channel.loop.now()
        decoder.append(bytes)
        do {
            try handleBufferedFrames()
        } catch {
            failConnection(code: error.code, error.message)
        }
        inputBudget.adjust(by: machine.settleInput(buffered: decoder.bufferedByteCount))
    }

    private func handleBufferedFrames() throws(RPCError) {
        while !machine.isClosed {
            let decoded: FrameDecoder.DecodedHeader
            do {
                guard let next = try decoder.nextHeader(admitting: admitLargeFrame) else { return }
                decoded = next
            } catch {
                throw .invalidArgument(error.message)
            }
            switch decoded {
            case .frame(let header):
                machine.frameCompleted()
                do { try Frame.validate(header) } catch { throw .invalidArgument(error.message) }
                try handle(header)
            case .refused(let header):
                let refusal = try machine.refusal(
                    type: header.type, streamID: header.streamID, length: header.length,
                    earlyLimit: decoder.admissionThreshold, budgetLimit: inputBudget.limit)
                reject(streamID: header.streamID, method: "", refusal)
            }
        }
    }

    func channelReadComplete(_ channel: Channel) {
        if let action = machine.readCompleted(now: channel.loop.now(), hasPartialFrame: decoder.hasPartialFrame) {
            perform([action])
        }
    }

    func channelWritabilityChanged(_ channel: Channel) {
        // While the server does not read (back pressure), an unfinished frame is not the client's fault.
        if channel.isWritable { machine.activity(now: channel.loop.now()) }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        perform(machine.channelInactive())
        observer.connectionCountChanged(to: registry.remove(self))
    }

    /// Whether the frame of `header`, longer than the early limit, may be buffered; reserves its size if so.
    private func admitLargeFrame(_ header: FrameHeader) -> Bool {
        guard let extra = machine.largeFrameReservation(type: header.type, wireSize: header.wireSize),
            inputBudget.reserve(extra)
        else { return false }
        machine.largeFrameAdmitted(extra: extra, wireSize: header.wireSize)
        return true
    }

    // MARK: - Frames

    /// Handles the frame `header` announced; its body is read in place (`decoder.withBody`).
    private func handle(_ header: FrameHeader) throws(RPCError) {
        switch try machine.frameReceived(type: header.type) {
        case .handshake:
            let handshake: RpcV1.Handshake
            do { handshake = try RpcV1.Handshake(protobufBytes: decoder.withBody { Array($0) }) } catch {
                throw .invalidArgument("the handshake does not parse: \(error)")
            }
            guard handshake.protocolVersion == Frame.protocolVersion else {
                throw RPCError(
                    .failedPrecondition,
                    "protocol version \(handshake.protocolVersion) is not supported; this server speaks 1")
            }
            perform(machine.handshakeReceived(maxFrameSize: handshake.maxFrameSize))
        case .request:
            try receiveRequest(streamID: header.streamID)
        case .cancel:
            perform(machine.cancelReceived(streamID: header.streamID))
        case .pong:
            send(type: .pong, streamID: 0, body: decoder.withBody { Array($0) })
        case .goAway:
            do { _ = try RpcV1.GoAway(protobufBytes: decoder.withBody { Array($0) }) } catch {
                throw .invalidArgument("the GOAWAY body does not parse: \(error)")
            }
            perform(machine.goAwayReceived())
        case .peerError:
            logger.warning(
                "peer reported a protocol error", [("body_bytes", String(header.length - Frame.headerSize))])
            perform(machine.closeRequested())
        case .ignore:
            break
        }
    }

    /// What a request's metadata entries gave.
    private enum MetadataRead {
        /// The request has none.
        case none
        /// They are `knownMetadata`'s bytes again: its metadata and caller serve.
        case known
        /// New entries (now checked), and what the server reads from them.
        case read(RequestMetadata, CallerMetadata)
    }

    private func receiveRequest(streamID: UInt32) throws(RPCError) {
        try machine.requestArrived(streamID: streamID)
        // Read where it lies in the decoder's buffer: a call its fast path answers copies out only the metadata
        // entries that changed, and what the handler decodes.
        decoder.withBody { body in serveRequest(streamID: streamID, body: body) }
    }

    /// Reads a REQUEST body, finds its route, checks that the call may run, and starts it.
    private func serveRequest(streamID: UInt32, body: UnsafeRawBufferPointer) {
        let fields: EnvelopeCodec.RequestFields
        let read: MetadataRead
        do throws(EnvelopeError) {
            fields = try EnvelopeCodec.scanRequest(body)
            read = try readMetadata(of: fields, in: body)
        } catch {
            // The stream id is usable, so answer on the stream and keep the connection.
            reject(
                streamID: streamID, method: "",
                RPCError(.invalidArgument, "the request envelope does not parse: \(error.message)"))
            return
        }
        let methodBytes = UnsafeRawBufferPointer(rebasing: body[fields.method])
        let route = router.routesByName.value(of: methodBytes)
        let method = route?.name ?? String(decoding: methodBytes, as: UTF8.self)
        let metadata: RequestMetadata?
        let caller: Caller?
        switch read {
        case .none:
            (metadata, caller) = (nil, nil)
        case .known:
            (metadata, caller) = (knownMetadata?.metadata, knownMetadata?.caller)
        case .read(let entries, let callerMetadata):
            // Caller metadata from a peer not trusted to assert it refuses the call: serving it as anonymous
            // would hide an attack (or a misconfigured peer) behind a confusing answer.
            if callerMetadata.assertsCaller && !router.access.trustsCallerMetadata(from: peer.role) {
                reject(streamID: streamID, method: method, router.access.callerMetadataRefusal(role: peer.role))
                return
            }
            (metadata, caller) = (entries, trustedCaller(callerMetadata))
            if entries.encoded.bytes.count <= Self.knownMetadataLimit {
                knownMetadata = KnownMetadata(metadata: entries, caller: caller)
            }
        }
        if let refusal = machine.admission() {
            reject(streamID: streamID, method: method, refusal)
            return
        }
        guard let handler = route?.handler ?? router.fallback else {
            reject(streamID: streamID, method: method, .unimplemented("method \"\(method)\" is not served here"))
            return
        }
        // A name the fallback does not list has no route; its rule is worked out here (the fallback may refuse it).
        let rule = route?.rule ?? router.access.peers(forMethod: method)
        guard rule.admits(peer.role) else {
            let refusal = router.access.refusal(method: method, role: peer.role, rule: rule)
            reject(streamID: streamID, method: method, refusal)
            return
        }
        start(
            streamID: streamID, method: method, route: route, timeoutMs: fields.timeoutMs, metadata: metadata,
            caller: caller, handler: handler, payload: UnsafeRawBufferPointer(rebasing: body[fields.payload]),
            loopHandler: route?.allowsLoopFallback == false ? nil : router.loopFallback)
    }

    /// Checks a request's metadata entries and reads what the server needs from them, unless they are the bytes
    /// of `knownMetadata`; the dictionary is decoded only if a handler reads it.
    private func readMetadata(
        of fields: EnvelopeCodec.RequestFields, in body: UnsafeRawBufferPointer
    ) throws(EnvelopeError) -> MetadataRead {
        if let range = fields.metadata {
            return try readMetadata(UnsafeRawBufferPointer(rebasing: body[range]))
        }
        guard let scattered = fields.scatteredMetadata else { return .none }
        // withUnsafeBytes only rethrows untyped errors, so the typed error travels in a Result.
        return try scattered.withUnsafeBytes { entries in
            Result { () throws(EnvelopeError) in try readMetadata(entries) }
        }.get()
    }

    private func readMetadata(_ entries: UnsafeRawBufferPointer) throws(EnvelopeError) -> MetadataRead {
        if let knownMetadata, knownMetadata.matches(entries) { return .known }
        let callerMetadata = try EnvelopeCodec.scanMetadata(entries)
        return .read(RequestMetadata(validated: EncodedMetadata(validatedBytes: Array(entries)[...])), callerMetadata)
    }

    /// The next request number, from the numbers this connection reserved.
    private func takeRequestNumber() -> UInt64 {
        if requestNumbersLeft == 0 {
            nextRequestNumber = router.reserveRequestNumbers(Self.requestNumberBlock)
            requestNumbersLeft = Self.requestNumberBlock
        }
        let number = nextRequestNumber
        nextRequestNumber &+= 1
        requestNumbersLeft -= 1
        return number
    }

    /// Starts a call: answers it in place when its fast path can, else runs its handler (a loop handler, or a
    /// Task) with a copy of `payload`.
    private func start(
        streamID: UInt32, method: String, route: RPCRouter.Route?, timeoutMs: UInt32, metadata: RequestMetadata?,
        caller: Caller?, handler: @escaping RPCMethod.Handler, payload payloadBytes: UnsafeRawBufferPointer,
        loopHandler: RPCLoopHandler?
    ) {
        let label = route == nil ? RPCServerConfiguration.unknownMethodLabel : method
        observer.callStarted(method: label)
        let now = readTime
        let deadline = machine.deadline(now: now, timeoutMilliseconds: timeoutMs)
        let requestNumber = takeRequestNumber()
        let context = RequestContext(
            requestNumber: requestNumber, method: method, deadline: deadline, metadata: metadata, connection: facts,
            caller: caller)
        // Answered before this returns unless the fast path declines: the call is never in flight, so no Task,
        // no stream table entry and no deadline timer; the machine saw its admission and sees its answer.
        if loopHandler == nil, runsHandlersOnEventLoop, let route, let fastPath = route.fastPath,
            answerInPlace(
                fastPath, streamID: streamID, payload: payloadBytes, context: context, requestNumber: requestNumber,
                route: route, label: label, startedAt: now)
        {
            return
        }
        let started = machine.callStarted(
            streamID: streamID, deadline: deadline,
            call: InFlightCall(
                method: method, label: label, requestNumber: requestNumber, startedAt: now,
                quietWhenOK: route?.quietWhenOK ?? false))
        let sequence = started.sequence
        if started.armDeadlineTimer { arm(.deadline, at: deadline) }

        let loop = channel.loop
        let payload = Array(payloadBytes)
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
                machine.updateCall(on: streamID, sequence: sequence) { $0.cancelLoopCall = cancel }
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
        // A handler's task is owned by the stream table: a cancel, the deadline, the drain grace period or the
        // connection closing cancels it, and `RPCServer.drain()` returns only once every connection has closed.
        guard runsHandlersOnEventLoop else {
            let task = Task(operation: operation)
            machine.updateCall(on: streamID, sequence: sequence) { $0.task = task }
            return
        }
        // The handler starts right here on the loop thread and, if it suspends, resumes on the loop: no wake-up
        // of another thread to start the call or to hand the response back, and no trip through the loop's job
        // queue. A handler that never suspends has answered before this returns, and its call is gone then.
        // (Made before the assignment: the handler may already have finished the call.)
        let task = Task.immediateDetached(executorPreference: loop, operation: operation)
        machine.updateCall(on: streamID, sequence: sequence) { $0.task = task }
    }

    /// Serves a call with its route's fast path and answers it; false when the fast path declines.
    private func answerInPlace(
        _ fastPath: RPCMethod.FastPath, streamID: UInt32, payload: UnsafeRawBufferPointer, context: RequestContext,
        requestNumber: UInt64, route: RPCRouter.Route, label: String, startedAt: UInt64
    ) -> Bool {
        let code: StatusCode
        do {
            guard let answer = try fastPath(payload, context) else { return false }
            code = .ok
            sendOK(streamID: streamID, payload: answer)
        } catch {
            let response = Self.failure(error, context: context)
            code = response.code
            sendResponse(streamID: streamID, response)
        }
        recordAnswer(
            method: route.name, label: label, requestNumber: requestNumber, startedAt: startedAt,
            quietWhenOK: route.quietWhenOK, code: code)
        return true
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
    private func trustedCaller(_ metadata: CallerMetadata) -> Caller? {
        guard let userID = metadata.userID ?? metadata.appID.map({ _ in "" }) else { return nil }
        let text = metadata.scopes ?? ""
        let scopes: Set<String>
        if let lastScopes, lastScopes.text == text {
            scopes = lastScopes.scopes
        } else {
            scopes = Set(text.split(separator: " ").map(String.init))
            lastScopes = (text, scopes)
        }
        return Caller(
            userID: userID, appID: metadata.appID ?? "", sessionID: metadata.sessionID ?? "", scopes: scopes)
    }

    // MARK: - Completion

    private func finishCall(streamID: UInt32, sequence: UInt64, response: RpcV1.Response) {
        guard let call = machine.callFinished(streamID: streamID, sequence: sequence) else { return }
        answer(streamID: streamID, call: call, response: response)
        perform(machine.closeIfDrained())
    }

    /// Records the call's end in metrics and the log, and sends its response while the connection is open.
    private func answer(streamID: UInt32, call: InFlightCall, response: RpcV1.Response) {
        recordAnswer(
            method: call.method, label: call.label, requestNumber: call.requestNumber, startedAt: call.startedAt,
            quietWhenOK: call.quietWhenOK, code: response.code)
        // Only calls still in flight are answered: a closed connection has none (its `.close` comes after the
        // answers the machine decided on, and writes them).
        sendResponse(streamID: streamID, response)
    }

    /// Records a call's end, answered with `code`, in metrics, the log and the machine.
    private func recordAnswer(
        method: String, label: String, requestNumber: UInt64, startedAt: UInt64, quietWhenOK: Bool, code: StatusCode
    ) {
        let elapsed = channel.loop.now() &- startedAt
        observer.callFinished(method: label, code: code, nanoseconds: elapsed)
        logger.log(
            quietWhenOK && code == .ok ? .debug : requestLogLevel, "call finished",
            [
                ("method", MethodNames.printable(method)), ("status", "\(code)"),
                ("latency_us", String(elapsed / 1000)), ("request_id", facts.requestID(number: requestNumber)),
            ])
        machine.callAnswered(method: method, code: code)
    }

    private func reject(streamID: UInt32, method: String, _ error: RPCError) {
        let label = self.label(of: method)
        observer.callStarted(method: label)
        observer.callFinished(method: label, code: error.code, nanoseconds: 0)
        sendResponse(
            streamID: streamID,
            RpcV1.Response(
                code: error.code, message: error.message, details: error.details, notProcessed: error.notProcessed,
                payload: []))
    }

    /// The metric label of `method`: its name when the server serves it or the fallback lists it, else
    /// `unknownMethodLabel`, so no client can add series by inventing names.
    private func label(of method: String) -> String {
        router.routes[method] == nil ? RPCServerConfiguration.unknownMethodLabel : method
    }

    // MARK: - Output

    /// Appends a RESPONSE, or RESOURCE_EXHAUSTED in its place when it would not fit the client's frame limit.
    private func sendResponse(streamID: UInt32, _ response: RpcV1.Response) {
        let size = EnvelopeCodec.responseBodySize(
            code: response.code, message: response.message, details: response.details,
            notProcessed: response.notProcessed, payload: response.payload)
        if Frame.headerSize + size > machine.peerMaxFrameSize {
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

    /// Appends an OK RESPONSE carrying `payload` (`sendResponse` without building the response first).
    private func sendOK(streamID: UInt32, payload: [UInt8]) {
        let size = EnvelopeCodec.responseBodySize(
            code: .ok, message: "", details: [], notProcessed: false, payload: payload)
        guard Frame.headerSize + size <= machine.peerMaxFrameSize else {
            sendResponse(streamID: streamID, Self.success(payload))
            return
        }
        EnvelopeCodec.appendResponse(
            streamID: streamID, code: .ok, message: "", details: [], notProcessed: false, payload: payload,
            to: &output)
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
        guard !output.isEmpty, !machine.isClosed else { return }
        channel.write(output)
        output.removeAll(keepingCapacity: true)
        channel.flush()
    }

    // MARK: - Actions

    /// Carries out what the machine decided, in order.
    private func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .sendHandshake:
                var handshake = RpcV1.Handshake()
                handshake.protocolVersion = Frame.protocolVersion
                handshake.maxFrameSize = UInt32(clamping: configuration.maxFrameSize)
                handshake.maxConcurrentStreams = UInt32(clamping: configuration.maxConcurrentStreams)
                handshake.agent = configuration.agent
                send(type: .handshake, streamID: 0, body: handshake.protobufBytes())
            case .sendGoAway(let lastStreamID):
                var goAway = RpcV1.GoAway()
                goAway.lastStreamId = lastStreamID
                goAway.reason = "server draining"
                send(type: .goAway, streamID: 0, body: goAway.protobufBytes())
            case .answer(let streamID, let call, let code, let message):
                call.cancelWork()
                answer(
                    streamID: streamID, call: call,
                    response: RpcV1.Response(
                        code: code, message: message, details: [], notProcessed: false, payload: []))
            case .abandon(let call):
                call.cancelWork()
                // Nobody will hear the answer; count the call as cancelled so in-flight gauges return to zero.
                observer.callFinished(
                    method: call.label, code: .cancelled, nanoseconds: channel.loop.now() &- call.startedAt)
            case .armTimer(let timer, let deadline):
                arm(timer, at: deadline)
            case .cancelTimer(let timer):
                if let handle = timers[timer.rawValue] { channel.loop.cancelTimer(handle) }
                timers[timer.rawValue] = nil
            case .failConnection(let code, let message):
                failConnection(code: code, message)
            case .releaseInput(let bytes):
                inputBudget.adjust(by: -bytes)
            case .close:
                if !output.isEmpty {
                    channel.write(output)
                    output.removeAll()
                }
                channel.close()
            }
        }
    }

    /// Arms `timer` for `deadline`, replacing the one armed before; its firing goes back to the machine.
    private func arm(_ timer: Machine.Timer, at deadline: UInt64) {
        if let handle = timers[timer.rawValue] { channel.loop.cancelTimer(handle) }
        timers[timer.rawValue] = channel.loop.scheduleTimer(at: deadline) { [self] in
            timers[timer.rawValue] = nil
            timerFired(timer)
        }
    }

    private func timerFired(_ timer: Machine.Timer) {
        let now = channel.loop.now()
        switch timer {
        case .handshake:
            perform(machine.handshakeTimerFired())
        case .idle:
            let wasOpen = machine.phase == .open
            let actions = machine.idleTimerFired(now: now)
            if wasOpen && machine.phase != .open { logger.debug("closing idle connection") }
            perform(actions)
        case .grace:
            if machine.callCount > 0 {
                logger.warning(
                    "drain grace period over; answering the calls still running UNAVAILABLE",
                    [("calls", String(machine.callCount))])
            }
            perform(machine.graceTimerFired())
        case .stall:
            perform(
                machine.stallTimerFired(
                    now: now, hasPartialFrame: decoder.hasPartialFrame, isWritable: channel.isWritable))
        case .deadline:
            perform(machine.deadlineTimerFired(now: now))
        }
    }

    // MARK: - Drain and errors

    /// Sends GOAWAY; in-flight calls finish, later requests are refused, the connection closes when idle.
    func startDraining() {
        assert(channel.loop.isInLoop, "ServerConnection runs on its channel's loop")
        perform(machine.drainRequested(now: channel.loop.now()))
    }

    private func failConnection(code: StatusCode, _ message: String) {
        guard !machine.isClosed else { return }
        logger.warning("protocol error; closing the connection", [("error", message)])
        var error = RpcV1.ProtocolError()
        error.code = code
        error.message = message
        send(type: .error, streamID: 0, body: error.protobufBytes())
        perform(machine.closeRequested())
    }
}

extension ServerConnectionStateMachine.Settings {
    init(_ configuration: RPCServerConfiguration) {
        self.init(
            maxConcurrentStreams: configuration.maxConcurrentStreams,
            idleTimeout: configuration.idleTimeout.nanoseconds,
            handshakeTimeout: configuration.handshakeTimeout.nanoseconds,
            drainGracePeriod: configuration.drainGracePeriod.nanoseconds,
            stalledFrameTimeout: configuration.stalledFrameTimeout.nanoseconds,
            defaultTimeout: configuration.defaultTimeout.nanoseconds, maxTimeout: configuration.maxTimeout.nanoseconds)
    }
}
