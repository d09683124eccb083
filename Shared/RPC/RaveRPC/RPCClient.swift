import RaveTelemetry
import RaveTransport
import Synchronization

/// A small pool of connections to one server address, used round robin.
///
/// Broken connections are replaced on demand; a failed connect waits an exponential backoff with jitter
/// before the next attempt. A call is retried only when it failed not-processed (safe to retry), up to
/// `CallOptions.maxRetries` times.
public final class RPCClient: RPCCaller, Sendable {
    /// Pool size and reconnect timing.
    public struct Configuration: Sendable {
        /// Connections kept open (default 2).
        public var connectionCount: Int = 2
        /// First reconnect delay after a failure (default 50 ms); doubles per failure.
        public var initialBackoff: Duration = .milliseconds(50)
        /// Longest reconnect delay (default 5 s).
        public var maximumBackoff: Duration = .seconds(5)
        /// The name the server certificate must match; the host when nil.
        public var serverName: String?

        public init() {}
    }

    private enum Slot {
        case idle(failures: Int, retryAt: UInt64)
        case connecting(Task<RPCConnection, any Error>)
        case connected(RPCConnection, failures: Int)
    }

    private let host: String
    private let port: Int
    private let tls: TLSContext?
    private let group: EventLoopGroup
    private let configuration: Configuration
    private let logger: Logger
    private let slots: Mutex<[Slot]>
    private let nextSlot = Atomic<Int>(0)
    /// Counts `resetBackoff()` calls; a connect waiting out a backoff stops waiting when it changes.
    private let backoffResets = Atomic<UInt64>(0)
    /// How often a connect waiting out a backoff looks for a `resetBackoff()`.
    private static let backoffPollInterval: UInt64 = 10_000_000

    public init(
        host: String, port: Int, tls: TLSContext?, group: EventLoopGroup,
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "rpc.client")
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.group = group
        self.configuration = configuration
        self.logger = logger
        self.slots = Mutex(
            Array(repeating: .idle(failures: 0, retryAt: 0), count: max(1, configuration.connectionCount)))
    }

    public func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        var attempt = 0
        while true {
            do {
                let connection = try await connection()
                return try await connection.call(method: method, request: request, options: options)
            } catch  where error.notProcessed && attempt < options.maxRetries {
                attempt += 1
            }
        }
    }

    /// Ends every reconnect backoff: the next call (or a connect already waiting) connects at once.
    ///
    /// For a health checker that has reason to believe the server is back (a proxy's periodic check): without
    /// it, a server that starts after its clients is only used once their backoff, up to `maximumBackoff`, ends.
    public func resetBackoff() {
        backoffResets.wrappingAdd(1, ordering: .releasing)
        slots.withLock { slots in
            for index in slots.indices {
                if case .idle(_, let retryAt) = slots[index], retryAt != .max {
                    slots[index] = .idle(failures: 0, retryAt: 0)
                }
            }
        }
    }

    /// Closes every connection; calls in flight fail with UNAVAILABLE.
    public func close() {
        let taken = slots.withLock { slots -> [Slot] in
            let taken = slots
            for index in slots.indices { slots[index] = .idle(failures: 0, retryAt: .max) }
            return taken
        }
        for slot in taken {
            switch slot {
            case .connected(let connection, _): connection.close()
            case .connecting(let task): task.cancel()
            case .idle: break
            }
        }
    }

    // MARK: - Pool

    private enum Choice {
        case use(RPCConnection)
        case wait(Task<RPCConnection, any Error>)
    }

    private func connection() async throws(RPCError) -> RPCConnection {
        let index = nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue % configuration.connectionCount
        let choice = slots.withLock { slots -> Choice in
            var failures = 0
            var retryAt: UInt64 = 0
            switch slots[index] {
            case .connected(let connection, _) where connection.isUsable:
                return .use(connection)
            case .connecting(let task):
                return .wait(task)
            case .connected(_, let count):
                failures = count
            case .idle(let count, let time):
                failures = count
                retryAt = time
            }
            let task = Task { try await self.connect(slot: index, failures: failures, retryAt: retryAt) }
            slots[index] = .connecting(task)
            return .wait(task)
        }
        switch choice {
        case .use(let connection):
            return connection
        case .wait(let task):
            do {
                return try await task.value
            } catch let error as RPCError {
                throw error
            } catch {
                throw .unavailable("connecting to \(host):\(port) was cancelled", notProcessed: true)
            }
        }
    }

    private func connect(slot index: Int, failures: Int, retryAt: UInt64) async throws -> RPCConnection {
        if retryAt == .max { throw RPCError.unavailable("the client is closed", notProcessed: true) }
        let resets = backoffResets.load(ordering: .acquiring)
        var failures = failures
        // Waits in short steps so that `resetBackoff()` ends the wait early.
        var now = monotonicNanoseconds()
        while retryAt > now {
            if backoffResets.load(ordering: .acquiring) != resets {
                failures = 0
                break
            }
            try await Task.sleep(for: .nanoseconds(Int64(min(retryAt - now, Self.backoffPollInterval))))
            now = monotonicNanoseconds()
        }
        do {
            let connection = try await RPCConnection.connect(
                host: host, port: port, tls: tls, serverName: configuration.serverName, group: group, logger: logger)
            slots.withLock { $0[index] = .connected(connection, failures: 0) }
            return connection
        } catch {
            let delay = backoff(afterFailures: failures + 1)
            logger.debug("connect failed", [("error", error.message), ("retry_in_ms", String(delay / 1_000_000))])
            slots.withLock { $0[index] = .idle(failures: failures + 1, retryAt: monotonicNanoseconds() + delay) }
            throw error
        }
    }

    /// Exponential backoff with full jitter, so clients that lost the same server don't reconnect in step.
    private func backoff(afterFailures failures: Int) -> UInt64 {
        let base = configuration.initialBackoff.nanoseconds
        let ceiling = configuration.maximumBackoff.nanoseconds
        let exponential = min(ceiling, base << UInt64(min(failures - 1, 20)))
        return UInt64.random(in: exponential / 2...max(exponential / 2, exponential))
    }
}
