import CRaveSystem
import Glibc

/// Accepts TCP connections (optionally TLS) on one loop and spreads the channels over a group, round robin.
///
/// `onAccept` runs on the new channel's loop before the handshake starts and must call `setHandler`; the
/// handler's `channelActive` follows once the TLS handshake completes. Connections that fail the handshake
/// never reach a handler. `limits` count every connection from `accept` to close; one over a limit is closed
/// at once, before any TLS work, and counted in `refusedConnections(_:)`.
public final class Listener: @unchecked Sendable {
    // @unchecked: `registration` and `fd` change only on `loop`; the other stored properties are immutable.

    /// The bound port (useful after binding port 0).
    public let localPort: Int
    public let host: String
    private let group: EventLoopGroup
    private let loop: EventLoop
    private let tls: TLSContext?
    private let options: ChannelOptions
    private let admission: ConnectionAdmission
    private let onAccept: @Sendable (Channel) -> Void
    private var fd: Int32
    private var registration: IORegistration?

    /// Connections taken per readiness event, so one busy listener doesn't starve its loop's channels.
    private static let acceptBatch = 256

    /// Binds host:port (port 0 picks a free port) and starts accepting, counting connections under `limits`.
    public convenience init(
        group: EventLoopGroup,
        host: String,
        port: Int,
        tls: TLSContext?,
        options: ChannelOptions = ChannelOptions(),
        limits: ConnectionLimits = ConnectionLimits(),
        onAccept: @escaping @Sendable (Channel) -> Void
    ) throws(TransportError) {
        try self.init(
            group: group, host: host, port: port, tls: tls, options: options,
            admission: ConnectionAdmission(limits: limits), onAccept: onAccept)
    }

    /// Binds host:port and starts accepting, counting connections in `admission`, which other listeners may share
    /// (one client's connections to several ports then count against one limit).
    public init(
        group: EventLoopGroup,
        host: String,
        port: Int,
        tls: TLSContext?,
        options: ChannelOptions = ChannelOptions(),
        admission: ConnectionAdmission,
        onAccept: @escaping @Sendable (Channel) -> Void
    ) throws(TransportError) {
        ignoreBrokenPipes()
        if let tls, tls.configuration.role != .server {
            throw .tlsConfiguration("a listener needs a TLS context configured for the server role")
        }
        let fd = try Socket.listen(host: host, port: port)
        do {
            localPort = try Socket.localPort(fd)
        } catch {
            Socket.close(fd)
            throw error
        }
        self.fd = fd
        self.host = host
        self.group = group
        self.tls = tls
        self.options = options
        self.admission = admission
        self.onAccept = onAccept
        loop = group.next()
        loop.execute { [self] in
            do {
                registration = try loop.register(fd: fd, interest: .readable, handler: self)
            } catch {
                closeOnLoop()
            }
        }
    }

    deinit {
        assert(fd < 0, "listener on port \(localPort) was dropped without close()")
    }

    /// The limits connections are admitted under.
    public var limits: ConnectionLimits { admission.limits }

    /// Connections closed right after `accept` so far because of `reason`.
    public func refusedConnections(_ reason: ConnectionRefusal) -> Int {
        admission.refusedCount(reason)
    }

    /// Connections accepted and not yet closed, and those of them still in their TLS handshake.
    public var connectionCounts: (open: Int, handshaking: Int) { admission.current }

    /// Stops accepting and closes the listening socket; established channels are not affected.
    public func close() {
        if loop.isInLoop {
            closeOnLoop()
        } else {
            loop.execute { [self] in closeOnLoop() }
        }
    }

    private func closeOnLoop() {
        guard fd >= 0 else { return }
        if let registration { loop.deregister(registration) }
        registration = nil
        Socket.close(fd)
        fd = -1
    }

    private func acceptBatchOfConnections() {
        for _ in 0..<Self.acceptBatch {
            guard fd >= 0 else { return }
            let accepted: (fd: Int32, address: String)?
            do {
                accepted = try Socket.accept(from: fd)
            } catch {
                // ECONNABORTED: the peer gave up while queued. EMFILE and friends: level-triggered epoll
                // retries on the next iteration, so there is nothing better to do than stop this batch.
                if error.errno == ECONNABORTED { continue }
                return
            }
            guard let accepted else { return }
            let host = ConnectionAdmission.host(of: accepted.address)
            guard admission.admit(host: host, handshaking: tls != nil) == nil else {
                // Refused before any TLS work: the cheapest answer to a flood is a closed socket.
                Socket.close(accepted.fd)
                continue
            }
            let ticket = AdmissionTicket(admission: admission, host: host, handshaking: tls != nil)
            hand(accepted.fd, address: accepted.address, ticket: ticket)
        }
    }

    private func hand(_ connection: Int32, address: String, ticket: AdmissionTicket) {
        let target = group.next()
        let tls = tls
        let options = options
        let onAccept = onAccept
        target.execute {
            let session: TLSSession?
            do {
                session = try tls?.makeSession(fd: connection, serverName: nil)
            } catch {
                Socket.close(connection)
                var ticket = ticket
                ticket.closed()
                return
            }
            let channel = Channel(
                loop: target, fd: connection, remoteAddress: address, session: session, connecting: false,
                options: options, admission: ticket)
            onAccept(channel)
            channel.start()
        }
    }
}

extension Listener: IOHandler {
    public func handleEvents(_ events: IOEvents) {
        if events.contains(.readable) {
            acceptBatchOfConnections()
        } else if !events.isDisjoint(with: [.hangup, .error]) {
            // The event loop is shutting down (or the socket failed): release the descriptor here, on the loop.
            closeOnLoop()
        }
    }
}

/// Ignores SIGPIPE once per process: writes to a closed socket must fail with EPIPE, not kill us.
func ignoreBrokenPipes() {
    _ = brokenPipesIgnored
}

private let brokenPipesIgnored: Void = rave_ignore_sigpipe()
