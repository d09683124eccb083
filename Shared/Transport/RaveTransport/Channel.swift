import CRaveSystem

/// One TCP connection, with or without TLS, driven by an event loop.
///
/// All methods and properties (except the `let`s) must be used on `loop`; hop there with
/// `channel.loop.execute { ... }` from other threads. Writes are buffered until `flush()`, so responses
/// produced in one loop iteration leave in one TLS write.
public final class Channel: @unchecked Sendable {
    // @unchecked: every `var` is confined to `loop` (asserted in each entry point); the `let`s are immutable.

    private enum State {
        case connecting, handshaking, active, closing, closed
    }

    /// The loop every callback of this channel runs on.
    public let loop: EventLoop
    /// The peer as "ip:port" ("127.0.0.1:5555", "[::1]:5555").
    public let remoteAddress: String
    public let options: ChannelOptions

    /// Whether buffered output is below the high-water mark; while false the channel does not read.
    public private(set) var isWritable = true
    /// Whether the handler stopped reading with `pauseReading()`.
    public private(set) var isReadingPaused = false
    /// Monotonic nanoseconds of the last byte read or written: the RPC layer's idle timer checks it.
    public private(set) var lastActivity: UInt64
    /// The peer's verified certificate (mutual TLS), once active; nil when it sent none.
    public private(set) var peerCertificate: PeerCertificate?
    /// The common name of the peer's verified certificate (mutual TLS), once active.
    public var peerCertificateCommonName: String? { peerCertificate?.commonName }
    /// "TLSv1.3" or "TLSv1.2" once active; nil for plain TCP.
    public private(set) var negotiatedProtocolVersion: String?
    /// The cipher suite's OpenSSL name once active; nil for plain TCP.
    public private(set) var negotiatedCipherSuite: String?
    /// The application protocol ALPN selected ("http/1.1", "h2") once active; nil when none was (or plain TCP).
    public private(set) var negotiatedApplicationProtocol: String?

    private var fd: Int32
    private var registration: IORegistration?
    private var session: TLSSession?
    private var state: State
    private var handler: (any ChannelHandler)?
    private var outbound = OutboundBuffer()
    private var interest: IOEvents = []
    private var handshakeWants: IOEvents = .readable
    private var flushRequested = false
    private var readWantsWritable = false
    private var writeWantsReadable = false
    private var readScheduled = false
    private var deadlineTimer: TimerHandle?
    /// The listener's count of this connection (accepted channels only), given back as the handshake ends and
    /// when the descriptor closes.
    private var admission: AdmissionTicket?
    /// Told once whether the channel became active; the connector resumes its caller with it.
    var onActivation: ((Result<Channel, TransportError>) -> Void)?

    /// Size of the per-thread read buffer every channel on a loop shares.
    private static let readChunk = 64 << 10
    /// Largest slice handed to one SSL_write or write(2).
    private static let writeChunk = 1 << 20

    init(
        loop: EventLoop, fd: Int32, remoteAddress: String, session: TLSSession?, connecting: Bool,
        options: ChannelOptions, admission: AdmissionTicket? = nil
    ) {
        self.admission = admission
        self.loop = loop
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.session = session
        self.options = options
        state = connecting ? .connecting : (session == nil ? .active : .handshaking)
        lastActivity = monotonicNanoseconds()
    }

    deinit {
        assert(fd < 0, "channel to \(remoteAddress) was dropped without being closed")
    }

    /// Whether the channel is active and not closing.
    public var isActive: Bool { state == .active }

    /// Bytes written but not yet accepted by the kernel (or by OpenSSL).
    public var bufferedOutboundBytes: Int { outbound.count }

    /// Sets the callbacks; call before activation (in the accept callback) or when connecting.
    public func setHandler(_ handler: any ChannelHandler) {
        assert(loop.isInLoop, "setHandler must run on the channel's loop")
        self.handler = handler
    }

    // MARK: - Writing

    /// Appends `bytes` to the output buffer; nothing is sent until `flush()`.
    ///
    /// Bytes written before the channel is active or after `close()` are dropped.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        assert(loop.isInLoop, "write must run on the channel's loop")
        guard state == .active else { return }
        outbound.append(bytes)
        updateWritability()
    }

    /// Appends `bytes` to the output buffer; nothing is sent until `flush()`.
    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Sends buffered output now, as far as the socket takes it; the rest goes when it becomes writable.
    public func flush() {
        assert(loop.isInLoop, "flush must run on the channel's loop")
        guard state == .active, !outbound.isEmpty else { return }
        flushRequested = true
        if !writeWantsReadable { flushNow() }
        updateInterest()
    }

    // MARK: - Reading

    /// Stops reading until `resumeReading()`, so a handler still answering earlier input (an HTTP request,
    /// answered in order) bounds what it buffers; the kernel's buffers then push back on the peer.
    public func pauseReading() {
        assert(loop.isInLoop, "pauseReading must run on the channel's loop")
        guard !isReadingPaused else { return }
        isReadingPaused = true
        updateInterest()
    }

    /// Reads again after `pauseReading()`, starting with what OpenSSL may already hold.
    public func resumeReading() {
        assert(loop.isInLoop, "resumeReading must run on the channel's loop")
        guard isReadingPaused else { return }
        isReadingPaused = false
        if state == .active { scheduleRead() }
        updateInterest()
    }

    // MARK: - Closing

    /// Closes gracefully: sends what is buffered, then TLS close_notify, then closes the socket.
    ///
    /// A peer that doesn't take the buffered output within `options.closeTimeout` is cut off.
    public func close() {
        assert(loop.isInLoop, "close must run on the channel's loop")
        switch state {
        case .closed, .closing:
            return
        case .connecting, .handshaking:
            teardown(error: .closed)
        case .active:
            state = .closing
            flushRequested = true
            deadlineTimer = loop.scheduleTimer(after: options.closeTimeout) { [self] in
                teardown(error: TransportError(.timeout, "peer did not take buffered output within close timeout"))
            }
            flushNow()
            updateInterest()
        }
    }

    /// Closes at once, dropping buffered output.
    public func closeNow() {
        assert(loop.isInLoop, "closeNow must run on the channel's loop")
        teardown(error: state == .connecting || state == .handshaking ? .closed : nil)
    }

    // MARK: - Starting

    /// Registers with the loop and starts connecting, the handshake, or reading.
    func start() {
        assert(loop.isInLoop, "start must run on the channel's loop")
        let initial: IOEvents = state == .connecting ? .writable : .readable
        do {
            registration = try loop.register(fd: fd, interest: initial, handler: self)
            interest = initial
        } catch {
            teardown(error: TransportError(anyError: error))
            return
        }
        switch state {
        case .connecting, .handshaking:
            deadlineTimer = loop.scheduleTimer(after: options.handshakeTimeout) { [self] in
                teardown(error: TransportError(.timeout, "connect and TLS handshake did not finish in time"))
            }
            if state == .handshaking { advanceHandshake() }
        default:
            becomeActive()
        }
    }

    private func finishConnecting() {
        if let error = Socket.connectError(fd) {
            teardown(error: error)
        } else if session == nil {
            state = .active
            becomeActive()
        } else {
            state = .handshaking
            advanceHandshake()
        }
    }

    private func advanceHandshake() {
        guard let session else { return }
        switch session.handshake() {
        case .done:
            peerCertificate = session.peerCertificate
            negotiatedProtocolVersion = session.protocolVersion
            negotiatedCipherSuite = session.cipherSuite
            negotiatedApplicationProtocol = session.applicationProtocol
            state = .active
            becomeActive()
        case .wantRead:
            handshakeWants = .readable
            updateInterest()
        case .wantWrite:
            handshakeWants = .writable
            updateInterest()
        case .closed:
            teardown(error: .tlsHandshakeFailed("peer closed the connection during the handshake"))
        case .failed(let error):
            teardown(error: error)
        }
    }

    private func becomeActive() {
        if let timer = deadlineTimer {
            loop.cancelTimer(timer)
            deadlineTimer = nil
        }
        admission?.handshakeEnded()
        lastActivity = monotonicNanoseconds()
        updateInterest()
        if let activation = onActivation {
            onActivation = nil
            activation(.success(self))
        }
        handler?.channelActive(self)
        // TLS may already hold application data that arrived with the last handshake flight.
        if state == .active { readAvailable(force: false) }
    }

    // MARK: - Tearing down

    /// Releases everything exactly once and tells whoever waits how the channel ended.
    private func teardown(error: TransportError?) {
        guard state != .closed else { return }
        let wasActive = state == .active || state == .closing
        state = .closed
        if let timer = deadlineTimer {
            loop.cancelTimer(timer)
            deadlineTimer = nil
        }
        if let registration {
            loop.deregister(registration)
            self.registration = nil
        }
        session = nil
        Socket.close(fd)
        fd = -1
        admission?.closed()
        outbound = OutboundBuffer()
        if let activation = onActivation {
            onActivation = nil
            activation(.failure(error ?? .closed))
        }
        let handler = self.handler
        // The handler usually holds the channel; dropping it here breaks the cycle.
        self.handler = nil
        if wasActive { handler?.channelInactive(self, error: error) }
    }
}

// MARK: - I/O

extension Channel: IOHandler {
    public func handleEvents(_ events: IOEvents) {
        assert(loop.isInLoop, "handleEvents must run on the channel's loop")
        switch state {
        case .closed:
            return
        case .connecting:
            finishConnecting()
            return
        case .handshaking:
            advanceHandshake()
            return
        case .active, .closing:
            break
        }
        let failed = !events.isDisjoint(with: [.hangup, .error])
        if events.contains(.writable) {
            if readWantsWritable {
                readWantsWritable = false
                readAvailable(force: false)
            }
            if flushRequested, !writeWantsReadable { flushNow() }
        }
        if events.contains(.readable) || failed {
            if writeWantsReadable {
                writeWantsReadable = false
                flushNow()
            }
            // A hangup is read even under back pressure: level-triggered RDHUP would otherwise spin the loop,
            // and reading is how we learn whether data, a clean close or an error is waiting.
            readAvailable(force: failed)
        }
        if failed, !events.contains(.readable), state != .closed {
            // A hangup without readable data: the peer is gone while we weren't reading (back pressure, a
            // graceful close), or the loop is shutting down and wants every descriptor closed now.
            teardown(error: state == .closing ? nil : .closed)
            return
        }
        updateInterest()
    }

    /// Reads until the socket is drained, the budget is spent, or back pressure stops us.
    private func readAvailable(force: Bool) {
        guard state == .active || state == .closing else { return }
        let buffer = UnsafeMutableRawBufferPointer(
            start: rave_thread_scratch_buffer(Self.readChunk), count: Self.readChunk)
        var budget = options.readBudget
        var delivered = false
        var ending: TransportError?? = nil
        reading: while budget > 0, (state == .active && isWritable && !isReadingPaused) || (force && state != .closed) {
            // Fill the chunk from as many TLS records as are ready before handing it over.
            var filled = 0
            var drained = false
            while filled < buffer.count {
                let space = buffer.count - filled
                let step = readOnce(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                switch step {
                case .done(let count):
                    filled += count
                    // The descriptor is level-triggered: if the kernel still holds bytes, epoll says so again.
                    // Stopping here saves the read(2) that would only return EAGAIN.
                    if session.map({ !$0.hasBufferedInput }) ?? (count < space) { drained = true }
                case .wantRead: drained = true
                case .wantWrite:
                    readWantsWritable = true
                    drained = true
                case .closed: ending = .some(nil)
                case .failed(let error): ending = error
                }
                if drained || ending != nil { break }
            }
            if filled > 0 {
                lastActivity = monotonicNanoseconds()
                budget -= filled
                if state == .active {
                    delivered = true
                    handler?.channelRead(self, UnsafeRawBufferPointer(rebasing: buffer[..<filled]))
                }
            }
            if drained || ending != nil { break reading }
        }
        if delivered, state == .active { handler?.channelReadComplete(self) }
        if let ending {
            teardown(error: ending)
        } else if budget <= 0 {
            scheduleRead()
        }
    }

    private func readOnce(into buffer: UnsafeMutableRawBufferPointer) -> TLSResult {
        if let session { return session.read(into: buffer) }
        do {
            switch try Socket.read(fd, into: buffer) {
            case .processed(0): return .closed
            case .processed(let count): return .done(count)
            case .wouldBlock: return .wantRead
            }
        } catch {
            return .failed(TransportError(error))
        }
    }

    /// Continues reading on a later iteration, after other channels had their turn.
    private func scheduleRead() {
        guard !readScheduled else { return }
        readScheduled = true
        loop.execute { [self] in
            readScheduled = false
            readAvailable(force: false)
            updateInterest()
        }
    }

    /// Writes buffered output until it is gone or the socket (or TLS) has to wait.
    private func flushNow() {
        while !outbound.isEmpty, state == .active || state == .closing {
            let step = outbound.withReadableBytes(limit: Self.writeChunk) { writeOnce($0) }
            switch step {
            case .done(let count):
                outbound.consume(count)
                lastActivity = monotonicNanoseconds()
            case .wantWrite:
                updateWritability()
                return
            case .wantRead:
                writeWantsReadable = true
                updateWritability()
                return
            case .closed:
                teardown(error: .connectionReset)
                return
            case .failed(let error):
                teardown(error: error)
                return
            }
        }
        flushRequested = false
        updateWritability()
        if state == .closing {
            session?.shutdown()
            teardown(error: nil)
        }
    }

    private func writeOnce(_ bytes: UnsafeRawBufferPointer) -> TLSResult {
        if let session { return session.write(bytes) }
        do {
            switch try Socket.write(fd, bytes) {
            case .processed(let count): return .done(count)
            case .wouldBlock: return .wantWrite
            }
        } catch {
            return .failed(TransportError(error))
        }
    }

    /// Flips `isWritable` at the water marks and tells the handler.
    private func updateWritability() {
        let buffered = outbound.count
        if isWritable, buffered > options.highWaterMark {
            isWritable = false
        } else if !isWritable, buffered <= options.lowWaterMark {
            isWritable = true
            // OpenSSL may hold decrypted records that no readiness event will announce.
            if state == .active { scheduleRead() }
        } else {
            return
        }
        updateInterest()
        handler?.channelWritabilityChanged(self)
    }

    /// Tells epoll what we wait for now; skips the syscall when nothing changed.
    private func updateInterest() {
        guard let registration else { return }
        var wanted: IOEvents = []
        switch state {
        case .connecting:
            wanted = .writable
        case .handshaking:
            wanted = handshakeWants
        case .active, .closing:
            if (state == .active && isWritable && !isReadingPaused) || writeWantsReadable { wanted.insert(.readable) }
            if (flushRequested && !outbound.isEmpty && !writeWantsReadable) || readWantsWritable {
                wanted.insert(.writable)
            }
        case .closed:
            return
        }
        guard wanted != interest else { return }
        do {
            try loop.modify(registration, interest: wanted)
            interest = wanted
        } catch {
            teardown(error: TransportError(anyError: error))
        }
    }
}
