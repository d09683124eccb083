import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection to 127.0.0.1, for tests that need what no client library sends: a connection that
/// never starts TLS (a half-open handshake), or a plain HTTP request to an admin port.
///
/// Blocking calls: use it from a thread of its own (`onOwnThread`), never on Swift's cooperative pool for long.
public final class LoopbackSocket: @unchecked Sendable {
    // @unchecked: `fd` changes only in `close()`, which tests call once, after every other use.
    public private(set) var fd: Int32

    /// Connects to 127.0.0.1:`port`; reads time out after `timeout` seconds.
    public init(port: Int, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackSocketError("socket: errno \(errno)") }
        var interval = timeval(tv_sec: timeout, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            fd = -1
            throw LoopbackSocketError("connect to port \(port): errno \(code)")
        }
    }

    deinit { close() }

    /// Sends every byte (or stops at the first error: the peer may close first).
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Reads until the peer closes (or a read times out) and returns what arrived.
    public func readUntilClosed() -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return received }
            received += buffer[..<count]
        }
    }

    /// Reads until the peer closes the connection; false when a read timed out first.
    public func waitForClose() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }

    public func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    /// One `GET path` with `Connection: close`: the status code and the body.
    public static func httpGet(port: Int, path: String) throws -> (status: Int, body: String) {
        let socket = try LoopbackSocket(port: port, timeout: 30)
        defer { socket.close() }
        socket.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        let response = String(decoding: socket.readUntilClosed(), as: UTF8.self)
        guard response.hasPrefix("HTTP/1.1 "), let status = Int(response.dropFirst(9).prefix(3)),
            let headEnd = response.range(of: "\r\n\r\n")
        else { throw LoopbackSocketError("not an HTTP response: \(response.prefix(100))") }
        return (status, String(response[headEnd.upperBound...]))
    }
}

/// Runs blocking `work` on a thread of its own and returns its result.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

public struct LoopbackSocketError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
