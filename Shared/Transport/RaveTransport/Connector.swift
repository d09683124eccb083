/// Opens client connections.
public enum Connector {
    /// Connects to host:port on `loop` and returns once the channel is active (after the TLS handshake).
    ///
    /// `host` is an IP literal, `localhost`, or a DNS name (resolved with `NameResolver`; with several addresses,
    /// each connection picks one at random, which spreads a client's connections over a headless service's
    /// pods). `tls` must be a client context; the server certificate is verified against `serverName`, or
    /// against `host` when it is nil. Connecting and the handshake together must finish within
    /// `options.handshakeTimeout`. `handler` gets `channelActive` right after this returns the channel.
    public static func connect(
        to host: String,
        port: Int,
        on loop: EventLoop,
        tls: TLSContext?,
        serverName: String? = nil,
        options: ChannelOptions = ChannelOptions(),
        handler: sending any ChannelHandler
    ) async throws(TransportError) -> Channel {
        ignoreBrokenPipes()
        if let tls, tls.configuration.role != .client {
            throw .tlsConfiguration("a connector needs a TLS context configured for the client role")
        }
        let handoff = HandlerHandoff(handler: handler)
        let numericHost = try await NameResolver.addresses(of: host).randomElement() ?? host
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Channel, TransportError>, Never>) in
            loop.execute {
                do throws(TransportError) {
                    let fd = try Socket.startConnect(host: numericHost, port: port)
                    let session: TLSSession?
                    do throws(TransportError) {
                        session = try tls?.makeSession(fd: fd, serverName: serverName ?? host)
                    } catch {
                        Socket.close(fd)
                        throw error
                    }
                    let address = numericHost.contains(":") ? "[\(numericHost)]:\(port)" : "\(numericHost):\(port)"
                    let channel = Channel(
                        loop: loop, fd: fd, remoteAddress: address, session: session, connecting: true,
                        options: options)
                    channel.setHandler(handoff.handler)
                    channel.onActivation = { continuation.resume(returning: $0) }
                    channel.start()
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Connects on the group's next loop; see `connect(to:port:on:tls:serverName:options:handler:)`.
    public static func connect(
        to host: String,
        port: Int,
        in group: EventLoopGroup,
        tls: TLSContext?,
        serverName: String? = nil,
        options: ChannelOptions = ChannelOptions(),
        handler: sending any ChannelHandler
    ) async throws(TransportError) -> Channel {
        try await connect(
            to: host, port: port, on: group.next(), tls: tls, serverName: serverName, options: options,
            handler: handler)
    }
}

/// Carries a handler the caller gave up (`sending`) to the loop that will own it.
private struct HandlerHandoff: @unchecked Sendable {
    // @unchecked: the caller passed the handler as `sending`, so after this point only the loop touches it.
    let handler: any ChannelHandler
}
