import RaveRPC
import RaveTelemetry
import RaveTransport
import Synchronization

/// One connection to a backend per event loop of the gateway, for calls proxied on the client connection's loop.
///
/// A call started from a loop on a connection of that same loop costs no thread hand-off: the request leaves and
/// the response comes back within that loop's iterations. A loop without a usable connection gets none at once
/// (the caller takes the general path meanwhile) and one is connected in the background, at most one attempt
/// per loop at a time and not more often than every `retryInterval` after a failure.
final class LoopConnections: Sendable {
    private enum Slot {
        case idle(retryAt: UInt64)
        case connecting
        case connected(RPCConnection)
    }

    private let host: String
    private let port: Int
    private let serverName: String?
    private let tls: TLSContext
    private let group: EventLoopGroup
    private let logger: Logger
    private let slots: Mutex<[Slot]>
    private static let retryInterval: UInt64 = 1_000_000_000

    /// Connections to `host`; the server certificate must match `serverName` when given, else `host`.
    init(host: String, port: Int, serverName: String? = nil, tls: TLSContext, group: EventLoopGroup, logger: Logger) {
        self.host = host
        self.port = port
        self.serverName = serverName
        self.tls = tls
        self.group = group
        self.logger = logger
        self.slots = Mutex(Array(repeating: .idle(retryAt: 0), count: group.loops.count))
    }

    /// The usable connection on `loop`, or nil (and a connect begins when none is under way).
    func connection(on loop: EventLoop) -> RPCConnection? {
        let index = loop.index
        let (ready, connect) = slots.withLock { slots -> (RPCConnection?, Bool) in
            guard slots.indices.contains(index) else { return (nil, false) }
            switch slots[index] {
            case .connected(let connection) where connection.isUsable:
                return (connection, false)
            case .connecting:
                return (nil, false)
            case .idle(let retryAt) where retryAt > monotonicNanoseconds():
                return (nil, false)
            case .idle, .connected:
                slots[index] = .connecting
                return (nil, true)
            }
        }
        if connect { startConnecting(slot: index, on: loop) }
        return ready
    }

    /// Closes every connection; later requests get none.
    func close() {
        let taken = slots.withLock { slots -> [Slot] in
            let taken = slots
            for index in slots.indices { slots[index] = .idle(retryAt: .max) }
            return taken
        }
        for case .connected(let connection) in taken { connection.close() }
    }

    private func startConnecting(slot index: Int, on loop: EventLoop) {
        Task {
            let slot: Slot
            do throws(RPCError) {
                let connection = try await RPCConnection.connect(
                    host: host, port: port, tls: tls, serverName: serverName, group: group, on: loop, logger: logger)
                slot = .connected(connection)
            } catch {
                logger.debug("connecting for the loop failed", [("error", error.message)])
                slot = .idle(retryAt: monotonicNanoseconds() &+ Self.retryInterval)
            }
            let closed = slots.withLock { slots -> Bool in
                if case .idle(.max) = slots[index] { return true }
                slots[index] = slot
                return false
            }
            if closed, case .connected(let connection) = slot { connection.close() }
        }
    }
}
