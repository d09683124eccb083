/// Callbacks of one connection; all run on the channel's event loop.
///
/// `channelActive` comes first (TCP connected and, with TLS, the handshake complete); `channelInactive`
/// comes exactly once after it. A connection that fails before becoming active never reaches its handler:
/// the connector throws, or the listener drops it.
public protocol ChannelHandler: AnyObject {
    /// The connection is ready; writes are allowed from now on.
    func channelActive(_ channel: Channel)
    /// Decrypted bytes, split anywhere; the buffer is valid only during the call.
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer)
    /// The end of one read batch: a good moment to flush responses produced by the batch.
    func channelReadComplete(_ channel: Channel)
    /// `channel.isWritable` flipped: stop producing output while it is false.
    func channelWritabilityChanged(_ channel: Channel)
    /// The connection closed; `error` is nil for a clean close (ours, or the peer's close_notify / EOF).
    func channelInactive(_ channel: Channel, error: TransportError?)
}

extension ChannelHandler {
    /// Does nothing: handlers that flush on every write don't need a batch boundary.
    public func channelReadComplete(_ channel: Channel) {}
    /// Does nothing: handlers whose output is bounded by their input don't need back pressure signals.
    public func channelWritabilityChanged(_ channel: Channel) {}
}

/// Tunables of a channel, with defaults for RPC connections.
public struct ChannelOptions: Sendable {
    /// Buffered output above which the channel stops reading and reports `isWritable == false`.
    public var highWaterMark: Int = 1 << 20
    /// Buffered output at or below which reading resumes and `isWritable` is true again.
    public var lowWaterMark: Int = 256 << 10
    /// Time allowed for connecting plus the TLS handshake, in nanoseconds.
    public var handshakeTimeout: UInt64 = 10_000_000_000
    /// Time a graceful `close()` may spend flushing before the connection is aborted, in nanoseconds.
    public var closeTimeout: UInt64 = 5_000_000_000
    /// Bytes read per readiness event before yielding to other channels on the loop.
    public var readBudget: Int = 1 << 20

    public init() {}
}
