import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Loopback ports for tests that must name an address before anything listens on it: a child process told where
/// to listen, a service that advertises its own address, a throwaway PostgreSQL cluster.
///
/// Prefer binding port 0 and asking the listener for its port; this is for when the address must be known first.
///
/// The ports come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range), so no outgoing
/// connection of a child process (to PostgreSQL, to another service) can take one between the moment it is chosen
/// and the moment the child binds it: that race made whole system stacks fail to start. Within one test process no
/// port is handed out twice. Across processes (two test runs at once on one machine, as when several engineers
/// or a bench share it) each process hands out ports only from blocks it holds an advisory lock on, so two
/// processes never pick the same port between choosing it and binding it either; the locks go with the process.
public enum LoopbackPort {
    /// Ports per block a process reserves at a time.
    static let blockSize = 64

    /// The block this process hands ports out of, and the next block to try once it is used up.
    private struct Cursor {
        var ports: Range<Int> = 0..<0
        var nextBlock: Int?
        var blocksTried = 0
    }

    private static let cursor = Mutex(Cursor())

    /// A TCP port on 127.0.0.1 that nothing was bound to a moment ago, that this process has not handed out before,
    /// and that no other process using this type can hand out.
    public static func unused() throws(LoopbackPortError) -> Int {
        let range = candidateRange()
        let blockCount = range.count / blockSize
        return try cursor.withLock { (cursor: inout Cursor) throws(LoopbackPortError) -> Int in
            while true {
                while let port = cursor.ports.first {
                    cursor.ports = cursor.ports.dropFirst()
                    if try isFree(port) { return port }
                }
                guard cursor.blocksTried < blockCount else { throw LoopbackPortError(errno: EADDRINUSE) }
                // Start at a block that differs per process, so a rerun right after does not meet sockets in
                // TIME_WAIT from the run before.
                let block = cursor.nextBlock ?? Int(getpid()) % blockCount
                cursor.nextBlock = (block + 1) % blockCount
                cursor.blocksTried += 1
                if reserve(block: block) {
                    let first = range.lowerBound + block * blockSize
                    cursor.ports = first..<first + blockSize
                }
            }
        }
    }

    /// Takes the advisory lock of `block` for the rest of this process; false when another process holds it.
    ///
    /// The descriptor stays open on purpose: the lock lasts as long as the process. Without a usable lock directory
    /// every block counts as free, as before the locks existed.
    private static func reserve(block: Int) -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-loopback-ports").path
        mkdir(directory, 0o1777)
        let descriptor = open("\(directory)/\(block).lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { return true }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
        close(descriptor)
        return false
    }

    /// Ports from 10,000 up to the start of the ephemeral range (32,768 when it cannot be read).
    private static func candidateRange() -> Range<Int> {
        let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let low = text?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
        return 10_000..<max(low, 11_000)
    }

    /// Whether a listening socket could bind `port` now (SO_REUSEADDR, as the services set it).
    private static func isFree(_ port: Int) throws(LoopbackPortError) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackPortError(errno: errno) }
        defer { close(descriptor) }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if bound { return true }
        if errno == EADDRINUSE || errno == EACCES { return false }
        throw LoopbackPortError(errno: errno)
    }
}

/// No loopback port could be had (the socket or bind call failed with `errno`).
public struct LoopbackPortError: Error, CustomStringConvertible {
    public let errno: Int32

    public var description: String { "cannot bind a loopback port: \(String(cString: strerror(errno)))" }
}
