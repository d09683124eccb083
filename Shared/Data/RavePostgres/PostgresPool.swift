import Foundation
import RaveTelemetry
import RaveTransport
import Synchronization

/// A bounded pool of PostgreSQL connections on event loops, with FIFO waiting, health checks and reconnects.
///
/// All methods may be called from any task. Connections are opened on demand; a broken one is dropped and
/// replaced on the next demand, so after a database restart calls fail UNAVAILABLE for the outage and then
/// succeed again without restarting anything.
public final class PostgresPool: PostgresQueryable, Sendable {
    /// How the pool connects and how patient it is; every field has a default suitable for a service.
    public struct Configuration: Sendable {
        /// A libpq connection string or URL ("postgresql://user@127.0.0.1:5432/rave_social").
        public var connectionString: String
        /// Most connections open at once (default 16).
        public var size: Int = 16
        /// How long a caller waits for a free connection before `PostgresError.poolExhausted` (default 5 s).
        public var acquireTimeout: Duration = .seconds(5)
        /// How long opening one connection may take (default 5 s).
        public var connectTimeout: Duration = .seconds(5)
        /// Idle connections unused this long get a `SELECT 1` before reuse (default 30 s).
        public var healthCheckInterval: Duration = .seconds(30)
        /// Per-statement deadline; the statement is cancelled on the server when it passes (default 30 s).
        public var statementTimeout: Duration? = .seconds(30)
        /// Event loops the pool runs when none is passed in (default 1).
        public var loopCount: Int = 1

        public init(connectionString: String) {
            self.connectionString = connectionString
        }
    }

    private struct State {
        var machine: PoolStateMachine<PostgresConnection>
        var waiters: [UInt64: CheckedContinuation<PostgresConnection, any Error>] = [:]
        var nextWaiterID: UInt64 = 1
    }

    private enum Effect {
        case resume(CheckedContinuation<PostgresConnection, any Error>, Result<PostgresConnection, any Error>)
        case action(PoolStateMachine<PostgresConnection>.Action)
    }

    public let configuration: Configuration
    let logger: Logger
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let clock: @Sendable () -> UInt64
    private let state: Mutex<State>
    /// Connection attempts and health checks: owned here, so shutdown can stop and await them.
    private let background = OwnedTasks()

    /// Creates a pool whose connections open when first needed; pass `group` to share loops with others.
    public init(
        configuration: Configuration, group: EventLoopGroup? = nil, logger: Logger = Logger(label: "postgres-pool"),
        clock: @escaping @Sendable () -> UInt64 = { monotonicNanoseconds() }
    ) throws {
        self.configuration = configuration
        self.logger = logger
        self.group = try group ?? EventLoopGroup(loopCount: max(1, configuration.loopCount))
        ownsGroup = group == nil
        self.clock = clock
        let limits = PoolStateMachine<PostgresConnection>.Limits(
            size: configuration.size, acquireTimeout: Self.nanoseconds(configuration.acquireTimeout),
            healthCheckInterval: Self.nanoseconds(configuration.healthCheckInterval))
        state = Mutex(State(machine: PoolStateMachine(limits: limits)))
        // Registers the conflict counters, so /metrics shows them at zero before the first conflict.
        _ = TransactionMetrics.shared
        scheduleHealthCheck()
    }

    /// Closes idle connections, fails waiters, and stops the pool's own loops once leased connections return.
    ///
    /// A connection attempt waiting out its backoff stops at once; one dialling ends within `connectTimeout`.
    /// `waitForBackgroundWork()` returns when both have.
    public func shutdown() {
        let effects = state.withLock { state in Self.resolve(state.machine.shutdown(), in: &state) }
        run(effects)
        background.cancelAll()
        if ownsGroup {
            let group = self.group
            // The loops run the queued closes before stopping; joining them must not block a pool thread.
            let thread = Thread { group.shutdown() }
            thread.name = "rave-pg-pool-shutdown"
            thread.start()
        }
    }

    /// Returns once the pool's own tasks (connection attempts, health checks) have ended; call after
    /// `shutdown()`, so that nothing of the pool runs once its owner's `run()` has returned.
    public func waitForBackgroundWork() async {
        await background.waitUntilDone()
    }

    /// Connection attempts and health checks the pool is running (zero once shut down and waited for).
    public var backgroundTaskCount: Int { background.count }

    /// Borrows a connection for `body`; it returns to the pool afterwards (or is dropped if it broke).
    public func withConnection<Result>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await acquire()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { try await $0.query(query) }
    }

    @discardableResult
    public func execute(
        _ statement: PostgresStatement, _ parameters: [(any PostgresEncodable)?] = []
    )
        async throws -> PostgresRows
    {
        try await withConnection { try await $0.execute(statement, parameters) }
    }

    /// Open, idle and waiting counts, for gauges.
    public var statistics: (open: Int, idle: Int, waiting: Int) {
        state.withLock { ($0.machine.openCount, $0.machine.idleCount, $0.machine.waiterCount) }
    }

    // MARK: - Leasing

    func acquire() async throws -> PostgresConnection {
        while true {
            let connection = try await acquireOnce()
            if !connection.isClosed { return connection }
            // It broke while idle (e.g. the server restarted); drop it and ask again.
            release(connection)
        }
    }

    private func acquireOnce() async throws -> PostgresConnection {
        let waiterID = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let effects = state.withLock { state in
                    state.waiters[waiterID] = continuation
                    return Self.resolve(state.machine.acquire(waiterID, now: clock()), in: &state)
                }
                run(effects)
                scheduleExpiry()
            }
        } onCancel: {
            let effects = state.withLock { state in Self.resolve(state.machine.cancelWaiter(waiterID), in: &state) }
            run(effects)
        }
    }

    func release(_ connection: PostgresConnection) {
        let effects = state.withLock { state in
            Self.resolve(state.machine.release(connection, isBroken: connection.isClosed, now: clock()), in: &state)
        }
        run(effects)
    }

    /// Turns machine actions into effects, taking waiters' continuations out of the map under the lock.
    private static func resolve(
        _ actions: [PoolStateMachine<PostgresConnection>.Action], in state: inout State
    )
        -> [Effect]
    {
        var effects: [Effect] = []
        for action in actions {
            switch action {
            case .lease(let connection, let waiter):
                if let continuation = state.waiters.removeValue(forKey: waiter) {
                    effects.append(.resume(continuation, .success(connection)))
                }
            case .fail(let waiters, let error):
                for waiter in waiters {
                    if let continuation = state.waiters.removeValue(forKey: waiter) {
                        effects.append(.resume(continuation, .failure(error)))
                    }
                }
            default:
                effects.append(.action(action))
            }
        }
        return effects
    }

    private func run(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .resume(let continuation, let result): continuation.resume(with: result)
            case .action(.connect(let delay)): openConnection(after: delay)
            case .action(.close(let connections)): for connection in connections { connection.close() }
            case .action(.healthCheck(let connection)): check(connection)
            case .action: break
            }
        }
    }

    private func openConnection(after delay: UInt64) {
        let configuration = configuration
        let loop = group.next()
        let logger = logger
        background.spawn { [self] in
            if delay > 0 { try? await Task.sleep(for: .nanoseconds(Int64(delay))) }
            if state.withLock({ $0.machine.isShutDown }) {
                // Shut down during the backoff: give the slot back without dialling the database.
                let effects = state.withLock { state in
                    Self.resolve(state.machine.connectFailed(.shutdown, now: clock()), in: &state)
                }
                run(effects)
                return
            }
            do {
                let connection = try await PostgresConnection.connect(
                    to: configuration.connectionString, on: loop, timeout: configuration.connectTimeout,
                    defaultTimeout: configuration.statementTimeout, logger: logger)
                connection.whenClosed { [weak self, weak connection] in
                    guard let self, let connection else { return }
                    let effects = state.withLock { state in
                        Self.resolve(state.machine.connectionBroke(connection), in: &state)
                    }
                    run(effects)
                }
                let effects = state.withLock { state in
                    Self.resolve(state.machine.connected(connection, now: clock()), in: &state)
                }
                run(effects)
            } catch {
                let failure = error as? PostgresError ?? PostgresError(.connectionFailed, "\(error)")
                logger.warning("database connection failed", [("error", failure.message)])
                let effects = state.withLock { state in
                    Self.resolve(state.machine.connectFailed(failure, now: clock()), in: &state)
                }
                run(effects)
            }
        }
    }

    private func check(_ connection: PostgresConnection) {
        background.spawn { [self] in
            _ = try? await connection.query(PostgresQuery("SELECT 1"), timeout: configuration.connectTimeout)
            release(connection)
        }
    }

    // MARK: - Timers

    private func scheduleExpiry() {
        guard let deadline = state.withLock({ $0.machine.nextDeadline }) else { return }
        let loop = group.loops[0]
        loop.execute {
            loop.scheduleTimer(at: deadline) { [weak self] in self?.expireWaiters() }
        }
    }

    private func expireWaiters() {
        let effects = state.withLock { state in
            Self.resolve(state.machine.expireWaiters(now: clock()), in: &state)
        }
        run(effects)
    }

    private func scheduleHealthCheck() {
        let interval = max(Self.nanoseconds(configuration.healthCheckInterval) / 2, 10_000_000)
        let loop = group.loops[0]
        loop.execute { [weak self] in
            loop.scheduleTimer(after: interval) { [weak self] in
                guard let self else { return }
                let effects = state.withLock { state in
                    Self.resolve(state.machine.checkIdleConnections(now: clock()), in: &state)
                }
                run(effects)
                if !state.withLock({ $0.machine.isShutDown }) { scheduleHealthCheck() }
            }
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
