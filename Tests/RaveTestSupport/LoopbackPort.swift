#if canImport(Glibc)
import Glibc
#endif

/// Loopback ports for tests that must name an address before anything listens on it: a child process told where
/// to listen, a service that advertises its own address, a throwaway PostgreSQL cluster.
///
/// Prefer binding port 0 and asking the listener for its port; this is for when the address must be known first.
public enum LoopbackPort {
    /// A TCP port on 127.0.0.1 that was free a moment ago.
    ///
    /// It is the kernel's choice for a socket bound to port 0, which is closed again. Another process may take it
    /// before the caller binds it (an outgoing connection can get it as its ephemeral port), so a caller that can
    /// retry on EADDRINUSE should.
    public static func unused() throws(LoopbackPortError) -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackPortError(errno: errno) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw LoopbackPortError(errno: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// No loopback port could be had (the socket or bind call failed with `errno`).
public struct LoopbackPortError: Error, CustomStringConvertible {
    public let errno: Int32

    public var description: String { "cannot bind a loopback port: \(String(cString: strerror(errno)))" }
}
