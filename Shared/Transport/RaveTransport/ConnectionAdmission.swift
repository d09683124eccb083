import Synchronization

/// How many connections a listener holds, counted from `accept` until the descriptor is closed.
///
/// A connection in its TLS handshake counts as much as an established one. A connection over a limit is closed
/// right after `accept`, before any TLS work is spent on it. 0 means no limit.
public struct ConnectionLimits: Hashable, Sendable {
    /// Connections one client IP address may hold at once.
    public var maxPerAddress: Int
    /// Connections still in their TLS handshake, from all addresses together.
    public var maxHandshakes: Int
    /// Connections still in their TLS handshake from one IP address.
    public var maxHandshakesPerAddress: Int
    /// Connections open at once, from all addresses together.
    public var maxTotal: Int

    public init(maxPerAddress: Int = 0, maxHandshakes: Int = 0, maxHandshakesPerAddress: Int = 0, maxTotal: Int = 0) {
        self.maxPerAddress = maxPerAddress
        self.maxHandshakes = maxHandshakes
        self.maxHandshakesPerAddress = maxHandshakesPerAddress
        self.maxTotal = maxTotal
    }
}

/// Why a listener closed a connection right after accepting it.
public struct ConnectionRefusal: Hashable, Sendable, CustomStringConvertible {
    /// A short stable name, used as a metric label.
    public let name: String

    /// The client's address already holds `maxPerAddress` connections.
    public static let perAddress = ConnectionRefusal(name: "per_address")
    /// `maxHandshakes` connections are in their TLS handshake.
    public static let handshakes = ConnectionRefusal(name: "handshakes")
    /// The client's address has `maxHandshakesPerAddress` connections in their TLS handshake.
    public static let handshakesPerAddress = ConnectionRefusal(name: "handshakes_per_address")
    /// The listener holds `maxTotal` connections.
    public static let total = ConnectionRefusal(name: "total")

    /// Every reason, for registering metric series up front.
    public static let all: [ConnectionRefusal] = [.perAddress, .handshakes, .handshakesPerAddress, .total]

    public var description: String { name }
}

/// The counts behind `ConnectionLimits`, shared by a listener and the channels it accepted, and by several
/// listeners when one count covers them (the gateway's binary and HTTP ports).
///
/// Thread-safe: listeners admit on their loops, channels report their handshake's end and their close on theirs.
public final class ConnectionAdmission: Sendable {
    private struct Counts {
        var byHost: [String: Int] = [:]
        var handshakingByHost: [String: Int] = [:]
        var handshaking = 0
        var total = 0
        var refusals: [ConnectionRefusal: Int] = [:]
    }

    public let limits: ConnectionLimits
    private let counts = Mutex(Counts())

    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Counts a connection from `host` that is about to start its handshake, or says why it may not.
    func admit(host: String, handshaking: Bool) -> ConnectionRefusal? {
        counts.withLock { counts -> ConnectionRefusal? in
            let refusal = Self.refusal(of: host, handshaking: handshaking, counts: counts, limits: limits)
            if let refusal {
                counts.refusals[refusal, default: 0] += 1
                return refusal
            }
            if handshaking {
                counts.handshaking += 1
                counts.handshakingByHost[host, default: 0] += 1
            }
            counts.total += 1
            counts.byHost[host, default: 0] += 1
            return nil
        }
    }

    private static func refusal(
        of host: String, handshaking: Bool, counts: Counts, limits: ConnectionLimits
    ) -> ConnectionRefusal? {
        let fromHost = counts.byHost[host] ?? 0
        let handshakingFromHost = counts.handshakingByHost[host] ?? 0
        if limits.maxTotal > 0 && counts.total >= limits.maxTotal { return .total }
        if limits.maxPerAddress > 0 && fromHost >= limits.maxPerAddress { return .perAddress }
        guard handshaking else { return nil }
        if limits.maxHandshakes > 0 && counts.handshaking >= limits.maxHandshakes { return .handshakes }
        if limits.maxHandshakesPerAddress > 0 && handshakingFromHost >= limits.maxHandshakesPerAddress {
            return .handshakesPerAddress
        }
        return nil
    }

    /// The handshake of a connection from `host` ended (it succeeded or the connection closed during it).
    func handshakeEnded(host: String) {
        counts.withLock { counts in
            counts.handshaking -= 1
            let remaining = (counts.handshakingByHost[host] ?? 1) - 1
            counts.handshakingByHost[host] = remaining > 0 ? remaining : nil
        }
    }

    /// A connection from `host` closed.
    func closed(host: String) {
        counts.withLock { counts in
            counts.total -= 1
            let remaining = (counts.byHost[host] ?? 1) - 1
            counts.byHost[host] = remaining > 0 ? remaining : nil
        }
    }

    /// Connections refused so far for `reason`.
    public func refusedCount(_ reason: ConnectionRefusal) -> Int {
        counts.withLock { $0.refusals[reason] ?? 0 }
    }

    /// Connections open (handshaking included) and those of them still in their handshake.
    public var current: (open: Int, handshaking: Int) {
        counts.withLock { ($0.total, $0.handshaking) }
    }

    /// The address without its port ("10.0.0.1:5555" → "10.0.0.1", "[::1]:5555" → "[::1]"): the key connections
    /// from one client are counted under.
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        return String(address[..<colon])
    }
}

/// A channel's place in its listener's counts, given back exactly once at each stage.
///
/// Confined to the channel's loop like the channel that holds it.
struct AdmissionTicket {
    let admission: ConnectionAdmission
    let host: String
    private(set) var handshaking: Bool
    private(set) var open = true

    init(admission: ConnectionAdmission, host: String, handshaking: Bool) {
        self.admission = admission
        self.host = host
        self.handshaking = handshaking
    }

    mutating func handshakeEnded() {
        guard handshaking else { return }
        handshaking = false
        admission.handshakeEnded(host: host)
    }

    mutating func closed() {
        handshakeEnded()
        guard open else { return }
        open = false
        admission.closed(host: host)
    }
}
