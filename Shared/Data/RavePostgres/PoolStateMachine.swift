/// The connection pool's bookkeeping, with no I/O, no locks and no clock of its own.
///
/// Every method takes the current time (monotonic nanoseconds) and returns the actions the caller must run
/// after releasing the lock that guards the machine: lease a connection to a waiter, fail waiters, open or
/// close connections, health-check an idle one.
struct PoolStateMachine<Connection: AnyObject> {
    typealias WaiterID = UInt64

    enum Action {
        /// Hand `connection` to the waiter (it is now leased).
        case lease(Connection, to: WaiterID)
        /// Fail these waiters with `error`.
        case fail([WaiterID], PostgresError)
        /// Open one new connection, after `delay` nanoseconds (backoff after failures); report the outcome
        /// with `connected` or `connectFailed`.
        case connect(delay: UInt64)
        /// Close these connections; they are already forgotten.
        case close([Connection])
        /// Run a cheap query on `connection` (now leased) and `release` it, broken or not.
        case healthCheck(Connection)
    }

    struct Limits {
        var size: Int
        var acquireTimeout: UInt64
        var healthCheckInterval: UInt64
        var initialBackoff: UInt64 = 50_000_000
        var maximumBackoff: UInt64 = 1_000_000_000
    }

    private struct Waiter {
        var id: WaiterID
        var deadline: UInt64
    }

    private let limits: Limits
    private var idle: [(connection: Connection, since: UInt64)] = []
    private var leased: Set<ObjectIdentifier> = []
    private var connecting = 0
    private var waiters: [Waiter] = []
    private var consecutiveFailures = 0
    /// Why the last attempt failed, until one succeeds; nil while the database is believed reachable.
    private var lastConnectError: PostgresError?
    private(set) var isShutDown = false

    init(limits: Limits) {
        precondition(limits.size > 0, "a pool needs room for at least one connection")
        self.limits = limits
    }

    var idleCount: Int { idle.count }
    var leasedCount: Int { leased.count }
    var waiterCount: Int { waiters.count }
    var openCount: Int { idle.count + leased.count }
    /// The earliest waiter deadline, for the caller's timer.
    var nextDeadline: UInt64? { waiters.map(\.deadline).min() }

    /// A caller wants a connection: lease an idle one, or queue the caller (FIFO) and open one if there is room.
    mutating func acquire(_ waiter: WaiterID, now: UInt64) -> [Action] {
        if isShutDown { return [.fail([waiter], .shutdown)] }
        if waiters.isEmpty, let entry = idle.popLast() {
            leased.insert(ObjectIdentifier(entry.connection))
            return [.lease(entry.connection, to: waiter)]
        }
        if openCount == 0, let lastConnectError {
            // The database is unreachable: fail fast rather than queue behind a backoff, and keep one attempt
            // going so the pool notices when it is back.
            var actions: [Action] = []
            if connecting == 0 {
                connecting += 1
                actions.append(.connect(delay: backoff))
            }
            return actions + [.fail([waiter], lastConnectError)]
        }
        waiters.append(Waiter(id: waiter, deadline: now &+ limits.acquireTimeout))
        return growIfNeeded()
    }

    /// A caller gives a connection back; a broken one is dropped and, if someone waits, replaced.
    mutating func release(_ connection: Connection, isBroken: Bool, now: UInt64) -> [Action] {
        leased.remove(ObjectIdentifier(connection))
        if isBroken || isShutDown { return [.close([connection])] + growIfNeeded() }
        return place(connection, now: now)
    }

    /// A connection attempt succeeded.
    mutating func connected(_ connection: Connection, now: UInt64) -> [Action] {
        connecting -= 1
        consecutiveFailures = 0
        lastConnectError = nil
        if isShutDown { return [.close([connection])] }
        return place(connection, now: now)
    }

    /// A connection attempt failed: with nothing open, waiters fail at once (the database is unreachable, and
    /// other attempts in flight would most likely fail too: waiting for them makes an outage look like a hang);
    /// otherwise they keep waiting for a connection to come back while a new attempt is made after a backoff.
    mutating func connectFailed(_ error: PostgresError, now: UInt64) -> [Action] {
        connecting -= 1
        consecutiveFailures += 1
        if isShutDown { return [] }
        lastConnectError = error
        var actions: [Action] = []
        if openCount == 0 && !waiters.isEmpty {
            actions.append(.fail(waiters.map(\.id), error))
            waiters.removeAll()
        }
        return actions + growIfNeeded()
    }

    /// A connection broke on its own (the server went away); an idle one is forgotten now rather than when next
    /// leased, so the pool sees that nothing is open and fails waiters instead of holding them during an outage.
    mutating func connectionBroke(_ connection: Connection) -> [Action] {
        guard let index = idle.firstIndex(where: { $0.connection === connection }) else { return [] }
        idle.remove(at: index)
        return [.close([connection])] + growIfNeeded()
    }

    /// Fails waiters whose acquire timeout has passed.
    mutating func expireWaiters(now: UInt64) -> [Action] {
        let expired = waiters.filter { $0.deadline <= now }.map(\.id)
        guard !expired.isEmpty else { return [] }
        waiters.removeAll { $0.deadline <= now }
        return [.fail(expired, .poolExhausted)]
    }

    /// A waiter gave up (its task was cancelled).
    mutating func cancelWaiter(_ waiter: WaiterID) -> [Action] {
        guard let index = waiters.firstIndex(where: { $0.id == waiter }) else { return [] }
        waiters.remove(at: index)
        return [.fail([waiter], PostgresError(.cancelled, "the task was cancelled while waiting for a connection"))]
    }

    /// Leases idle connections unused for longer than the health-check interval so they can be checked.
    mutating func checkIdleConnections(now: UInt64) -> [Action] {
        guard !isShutDown else { return [] }
        var actions: [Action] = []
        idle.removeAll { entry in
            guard now &- entry.since >= limits.healthCheckInterval else { return false }
            leased.insert(ObjectIdentifier(entry.connection))
            actions.append(.healthCheck(entry.connection))
            return true
        }
        return actions
    }

    /// Stops the pool: waiters fail, idle connections close, leased ones close when released.
    mutating func shutdown() -> [Action] {
        guard !isShutDown else { return [] }
        isShutDown = true
        var actions: [Action] = [.close(idle.map(\.connection))]
        idle.removeAll()
        if !waiters.isEmpty { actions.append(.fail(waiters.map(\.id), .shutdown)) }
        waiters.removeAll()
        return actions
    }

    private mutating func place(_ connection: Connection, now: UInt64) -> [Action] {
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            leased.insert(ObjectIdentifier(connection))
            return [.lease(connection, to: waiter.id)]
        }
        idle.append((connection, now))
        return []
    }

    /// Opens connections for waiters that no pending attempt will serve, within the size limit.
    private mutating func growIfNeeded() -> [Action] {
        var actions: [Action] = []
        while waiters.count > connecting && openCount + connecting < limits.size {
            connecting += 1
            actions.append(.connect(delay: backoff))
        }
        return actions
    }

    private var backoff: UInt64 {
        guard consecutiveFailures > 0 else { return 0 }
        let exponent = min(consecutiveFailures - 1, 16)
        return min(limits.initialBackoff << UInt64(exponent), limits.maximumBackoff)
    }
}
