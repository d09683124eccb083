import CRaveSystem
import Glibc

/// TCP helpers over the socket shims; every call goes through `systemCall`, so EINTR, EAGAIN and descriptor
/// bugs are handled in one place.
enum Socket {
    static let listenBacklog: Int32 = 4096

    /// A non-blocking socket listening on host:port (port 0 picks a free one).
    static func listen(host: String, port: Int) throws(TransportError) -> Int32 {
        let fd = try open(for: host)
        do {
            _ = try blockingSystemCall("bind/listen") {
                rave_tcp_bind_listen(fd, host, Int32(port), listenBacklog)
            }
        } catch {
            close(fd)
            throw TransportError(error)
        }
        return fd
    }

    /// A non-blocking socket with a connect to host:port under way.
    static func startConnect(host: String, port: Int) throws(TransportError) -> Int32 {
        let fd = try open(for: host)
        let result = rave_tcp_connect(fd, host, Int32(port))
        let code = Glibc.errno
        if result < 0, code != EINPROGRESS {
            close(fd)
            throw TransportError(SystemCallError("connect", errno: code))
        }
        _ = rave_tcp_set_nodelay(fd)
        return fd
    }

    /// Accepts one pending connection: its descriptor and "ip:port", or nil when none is waiting.
    static func accept(from listener: Int32) throws(SystemCallError) -> (fd: Int32, address: String)? {
        var text = [CChar](repeating: 0, count: 64)
        let result = try systemCall("accept4") { rave_tcp_accept(listener, &text, text.count) }
        guard case .processed(let fd) = result else { return nil }
        _ = rave_tcp_set_nodelay(fd)
        return (fd, String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    static func localPort(_ fd: Int32) throws(TransportError) -> Int {
        do {
            return Int(try blockingSystemCall("getsockname") { rave_tcp_local_port(fd) })
        } catch {
            throw TransportError(error)
        }
    }

    /// The error a non-blocking connect finished with, or nil when it succeeded.
    static func connectError(_ fd: Int32) -> TransportError? {
        let code = rave_tcp_pending_error(fd)
        if code == 0 { return nil }
        return TransportError(SystemCallError("connect", errno: code < 0 ? Glibc.errno : code))
    }

    /// Reads into `buffer`: bytes read (0 at end of stream), or `.wouldBlock`.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> IOResult<Int> {
        try systemCall("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes from `bytes`: bytes written, or `.wouldBlock`.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> IOResult<Int> {
        try systemCall("write") { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    /// Closes a descriptor we own; EBADF means we closed it twice, which is a bug.
    static func close(_ fd: Int32) {
        let result = Glibc.close(fd)
        // Linux releases the descriptor even when close fails with EINTR, so it is never retried.
        precondition(result == 0 || Glibc.errno != EBADF, "close(\(fd)) of a descriptor we did not own")
    }

    private static func open(for host: String) throws(TransportError) -> Int32 {
        guard rave_tcp_is_numeric_host(host) == 1 else { throw .invalidAddress(host) }
        do {
            return try blockingSystemCall("socket") { rave_tcp_socket_for(host) }
        } catch {
            throw TransportError(error)
        }
    }
}
