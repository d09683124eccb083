import RaveTransport

/// One HTTP/1.1 connection: parses requests and answers them one at a time, in order (pipelined requests wait for
/// the answers before them).
///
/// All methods run on the channel's loop. Timers follow the loop's clock (`EventLoop.now()`), so a test on a manual
/// clock moves them: a request whose bytes stop arriving for `stalledRequestTimeout` is answered 408 and the
/// connection closed; a connection with nothing to answer and nothing arriving for `idleTimeout` is closed.
final class HTTPServerConnection: ChannelHandler, HTTPConnectionHandle, @unchecked Sendable {
    // @unchecked: every `var` is used only on the channel's loop; deferred answers hop back with `execute`.

    let channel: Channel
    private let settings: HTTPServerSettings
    private let responder: any HTTPResponder
    private let registry: HTTPConnectionRegistry
    private var parser: HTTPRequestParser
    private var info: HTTPConnectionInfo
    /// A deferred answer is being produced; nothing else is answered until it is written.
    private var busy = false
    private var task: Task<Void, Never>?
    /// Cancels the answer being produced on the loop (`HTTPAnswer.onLoop`).
    private var cancelAnswer: (() -> Void)?
    /// Whether an `onLoop` answer's `start` is running, and what it responded before returning: sent by the
    /// answering loop in `answerNext` rather than from inside `start`.
    private var startingOnLoop = false
    private var answeredWhileStarting: HTTPServerResponse?
    private var closed = false
    private var draining = false
    /// Loop time of the last byte read, and of the last response written.
    private var lastInput: UInt64 = 0
    private var lastOutput: UInt64 = 0
    private var timer: TimerHandle?
    private var timerDeadline: UInt64?

    private static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    init(
        channel: Channel, settings: HTTPServerSettings, responder: any HTTPResponder, registry: HTTPConnectionRegistry
    ) {
        self.channel = channel
        self.settings = settings
        self.responder = responder
        self.registry = registry
        parser = HTTPRequestParser(limits: settings.limits)
        info = HTTPConnectionInfo(remoteAddress: channel.remoteAddress)
    }

    func channelActive(_ channel: Channel) {
        info.peerCertificate = channel.peerCertificate
        lastOutput = channel.loop.now()
        if registry.add(self) { draining = true }
        if draining {
            close()
            return
        }
        updateTimer()
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        parser.append(bytes)
        lastInput = channel.loop.now()
        if busy {
            if parser.bufferedByteCount > settings.maxBufferedInput { channel.pauseReading() }
        } else {
            answerNext()
        }
    }

    func channelWritabilityChanged(_ channel: Channel) {
        if channel.isWritable { answerNext() }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        closed = true
        cancelTimer()
        task?.cancel()
        task = nil
        let cancel = cancelAnswer
        cancelAnswer = nil
        cancel?()
        registry.remove(self)
    }

    /// Whether part of a request has arrived and the rest has not.
    var hasPartialRequest: Bool { parser.hasPartialRequest }

    /// Closes the connection at once when it is idle, else after the request under way is answered.
    func startDraining() {
        draining = true
        if !busy, !parser.hasPartialRequest { close() }
    }

    // MARK: - Answering

    /// Answers every complete request buffered, in order, until one is deferred or output backs up.
    private func answerNext() {
        while !busy, !closed, channel.isWritable {
            let request: HTTPServerRequest
            do {
                guard let next = try parser.nextRequest() else {
                    if parser.takeContinueRequest() {
                        channel.write(Self.continueResponse)
                        channel.flush()
                    }
                    break
                }
                request = next
            } catch {
                fail(error)
                return
            }
            switch responder.answer(request, from: info) {
            case .immediate(let response):
                send(response, for: request)
            case .deferred(let produce):
                startDeferred(produce, for: request)
            case .onLoop(let start, let otherwise):
                busy = true
                startingOnLoop = true
                let cancel = start(channel.loop) { [self] response in answeredOnLoop(response, for: request) }
                startingOnLoop = false
                if let response = answeredWhileStarting {
                    answeredWhileStarting = nil
                    busy = false
                    send(response, for: request)
                } else if let cancel {
                    cancelAnswer = cancel
                } else {
                    startDeferred(otherwise, for: request)
                }
            }
        }
        if !busy, !closed {
            if channel.isReadingPaused { channel.resumeReading() }
            if draining, !parser.hasPartialRequest { close() }
        }
        updateTimer()
    }

    private func startDeferred(
        _ produce: @escaping @Sendable () async -> HTTPServerResponse, for request: HTTPServerRequest
    ) {
        busy = true
        let loop = channel.loop
        task = Task.detached { [self] in
            let response = await produce()
            loop.execute { [self] in
                guard busy else { return }
                busy = false
                task = nil
                send(response, for: request)
                answerNext()
            }
        }
    }

    /// The response of an `onLoop` answer, on the loop.
    private func answeredOnLoop(_ response: HTTPServerResponse, for request: HTTPServerRequest) {
        guard busy else { return }
        if startingOnLoop {
            answeredWhileStarting = response
            return
        }
        busy = false
        cancelAnswer = nil
        send(response, for: request)
        answerNext()
    }

    private func send(_ response: HTTPServerResponse, for request: HTTPServerRequest) {
        guard !closed else { return }
        let keepAlive = request.keepAlive && !response.closesConnection && !draining
        channel.write(response.serialized(keepAlive: keepAlive, includeBody: request.method != "HEAD"))
        channel.flush()
        lastOutput = channel.loop.now()
        if !keepAlive { close() }
    }

    /// Answers a request that cannot be read (malformed, too large, stalled) and closes: what follows it cannot be
    /// framed.
    private func fail(_ error: HTTPParseError) {
        guard !closed else { return }
        var response = responder.answer(error, from: info)
        response.closesConnection = true
        channel.write(response.serialized(keepAlive: false))
        channel.flush()
        close()
    }

    private func close() {
        guard !closed else { return }
        closed = true
        cancelTimer()
        channel.close()
    }

    // MARK: - Timers

    /// When the connection next needs attention: a stalled request's deadline or the idle deadline; none while a
    /// request is being answered.
    private var deadline: UInt64? {
        guard !closed, !busy else { return nil }
        let since = max(lastInput, lastOutput)
        let timeout = parser.hasPartialRequest ? settings.stalledRequestTimeout : settings.idleTimeout
        return since &+ timeout.wholeNanoseconds
    }

    /// Arms the one timer for `deadline` when nothing earlier is armed; a later deadline is found when it fires.
    private func updateTimer() {
        guard let wanted = deadline else {
            cancelTimer()
            return
        }
        if let armed = timerDeadline, armed <= wanted { return }
        cancelTimer()
        timerDeadline = wanted
        timer = channel.loop.scheduleTimer(at: wanted) { [weak self] in self?.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerDeadline = nil
        guard let due = deadline else { return }
        guard channel.loop.now() >= due else {
            updateTimer()
            return
        }
        if parser.hasPartialRequest {
            let seconds = settings.stalledRequestTimeout.wholeNanoseconds / 1_000_000
            fail(
                HTTPParseError(
                    status: .requestTimeout,
                    reason: "the request stopped arriving: nothing was received for \(seconds) ms"))
        } else {
            close()
        }
    }

    private func cancelTimer() {
        if let timer { channel.loop.cancelTimer(timer) }
        timer = nil
        timerDeadline = nil
    }
}
