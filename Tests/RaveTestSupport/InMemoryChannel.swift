// The in-memory connection builds `Channel`s on descriptors of its own with RaveTransport's internal initializer,
// which only modules compiled for testing expose: debug builds. In a release build this file is empty (no test
// target is built there).
#if DEBUG
import Glibc

@testable import RaveTransport

/// A connection that never leaves the process: two plain channels on one event loop, joined by a Unix socket pair.
///
/// The handler under test gets a real `Channel` (the same buffering, flushing, back pressure and close as over
/// TCP) without a listener, a port, TCP or TLS, and the test's end is a `ChannelHandler` of the test's own (a raw
/// frame client, a recorder) that feeds the handler bytes and sees what it writes. Use it for tests about protocol
/// logic (framing, what a connection answers, when it closes); tests about sockets, TLS or what reaches a real
/// listener keep using real ones. On a `ManualLoopClock`'s group, the handler's timers follow that clock.
public enum InMemoryConnection {
    /// Connects `peer`, the test's end, to the handler `makeHandler` builds for the other end, on `loop`; returns
    /// the peer's channel once both ends are active (`channelActive` has run on both).
    public static func connect(
        on loop: EventLoop, peer: some ChannelHandler & Sendable, options: ChannelOptions = ChannelOptions(),
        handler makeHandler: @escaping @Sendable (Channel) -> any ChannelHandler
    ) async throws -> Channel {
        ignoreBrokenPipes()
        var descriptors: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0 else {
            throw TransportError(SystemCallError("socketpair", errno: errno))
        }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        let (served, tested) = (descriptors[0], descriptors[1])
        return await withCheckedContinuation { (continuation: CheckedContinuation<Channel, Never>) in
            loop.execute {
                let handled = Channel(
                    loop: loop, fd: served, remoteAddress: "in-memory", session: nil, connecting: false,
                    options: options)
                handled.setHandler(makeHandler(handled))
                let channel = Channel(
                    loop: loop, fd: tested, remoteAddress: "in-memory", session: nil, connecting: false,
                    options: options)
                channel.setHandler(peer)
                handled.start()
                channel.start()
                continuation.resume(returning: channel)
            }
        }
    }
}
#endif
