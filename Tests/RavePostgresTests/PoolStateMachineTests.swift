import Testing

@testable import RavePostgres

/// A stand-in pool connection: the state machine only needs identity.
final class FakeConnection {}

@Suite struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<FakeConnection>

    private func makeMachine(size: Int = 2) -> Machine {
        Machine(limits: .init(size: size, acquireTimeout: 1_000, healthCheckInterval: 10_000))
    }

    @Test func firstAcquireOpensAConnectionAndLeasesItWhenConnected() {
        var machine = makeMachine()
        let actions = machine.acquire(1, now: 0)
        guard case .connect(let delay) = actions.first, actions.count == 1 else {
            Issue.record("expected one connect, got \(actions)")
            return
        }
        #expect(delay == 0)
        let connection = FakeConnection()
        let leased = machine.connected(connection, now: 10)
        guard case .lease(let leasedConnection, let waiter) = leased.first else {
            Issue.record("expected a lease, got \(leased)")
            return
        }
        #expect(leasedConnection === connection && waiter == 1)
        #expect(machine.leasedCount == 1)
    }

    @Test func releasedConnectionGoesToWaitersInFIFOOrder() {
        var machine = makeMachine(size: 1)
        _ = machine.acquire(1, now: 0)
        let connection = FakeConnection()
        _ = machine.connected(connection, now: 0)
        #expect(machine.acquire(2, now: 1).isEmpty)
        #expect(machine.acquire(3, now: 2).isEmpty)
        guard case .lease(_, let first) = machine.release(connection, isBroken: false, now: 3).first else {
            Issue.record("expected a lease")
            return
        }
        guard case .lease(_, let second) = machine.release(connection, isBroken: false, now: 4).first else {
            Issue.record("expected a lease")
            return
        }
        #expect(first == 2 && second == 3)
        #expect(machine.release(connection, isBroken: false, now: 5).isEmpty)
        #expect(machine.idleCount == 1)
    }

    @Test func waitersPastTheAcquireTimeoutFailWithPoolExhausted() {
        var machine = makeMachine(size: 1)
        _ = machine.acquire(1, now: 0)
        _ = machine.connected(FakeConnection(), now: 0)
        _ = machine.acquire(2, now: 100)
        #expect(machine.expireWaiters(now: 500).isEmpty)
        let actions = machine.expireWaiters(now: 1_100)
        guard case .fail(let waiters, let error) = actions.first else {
            Issue.record("expected a failure, got \(actions)")
            return
        }
        #expect(waiters == [2])
        #expect(error.code == .poolExhausted && error.kind == .resourceExhausted)
    }

    @Test func failedConnectWithNothingOpenFailsWaitersAndBacksOff() {
        var machine = makeMachine()
        _ = machine.acquire(1, now: 0)
        let error = PostgresError(.connectionFailed, "refused")
        let actions = machine.connectFailed(error, now: 1)
        guard case .fail(let waiters, let reported) = actions.first else {
            Issue.record("expected a failure, got \(actions)")
            return
        }
        #expect(waiters == [1] && reported.kind == .unavailable)
        guard case .connect(let delay) = machine.acquire(2, now: 2).first else {
            Issue.record("expected a reconnect")
            return
        }
        #expect(delay > 0)
    }

    @Test func brokenConnectionIsClosedAndReplacedForWaiters() {
        var machine = makeMachine(size: 1)
        _ = machine.acquire(1, now: 0)
        let connection = FakeConnection()
        _ = machine.connected(connection, now: 0)
        _ = machine.acquire(2, now: 1)
        let actions = machine.release(connection, isBroken: true, now: 2)
        #expect(actions.count == 2)
        guard case .close(let closed) = actions.first, case .connect = actions.last else {
            Issue.record("expected close then connect, got \(actions)")
            return
        }
        #expect(closed.first === connection)
    }

    @Test func idleConnectionsAreHealthCheckedAfterTheInterval() {
        var machine = makeMachine()
        _ = machine.acquire(1, now: 0)
        let connection = FakeConnection()
        _ = machine.connected(connection, now: 0)
        _ = machine.release(connection, isBroken: false, now: 5)
        #expect(machine.checkIdleConnections(now: 100).isEmpty)
        guard case .healthCheck(let checked) = machine.checkIdleConnections(now: 20_000).first else {
            Issue.record("expected a health check")
            return
        }
        #expect(checked === connection && machine.idleCount == 0)
    }

    @Test func shutdownFailsWaitersAndClosesIdleConnections() {
        var machine = makeMachine(size: 1)
        _ = machine.acquire(1, now: 0)
        let connection = FakeConnection()
        _ = machine.connected(connection, now: 0)
        _ = machine.acquire(2, now: 0)
        let actions = machine.shutdown()
        #expect(actions.contains { if case .fail([2], let error) = $0 { error.code == .shutdown } else { false } })
        guard case .fail(_, let error) = machine.acquire(3, now: 1).first else {
            Issue.record("expected acquire after shutdown to fail")
            return
        }
        #expect(error.code == .shutdown)
        guard case .close(let closed) = machine.release(connection, isBroken: false, now: 2).first else {
            Issue.record("expected the returned connection to close")
            return
        }
        #expect(closed.first === connection)
    }

    @Test func whileTheDatabaseIsUnreachableAcquireFailsFastAndOneAttemptProbes() {
        var machine = makeMachine()
        _ = machine.acquire(1, now: 0)
        _ = machine.connectFailed(PostgresError(.connectionFailed, "refused"), now: 1)
        let first = machine.acquire(2, now: 2)
        #expect(first.count == 2)
        guard case .connect = first.first, case .fail([2], let error) = first.last else {
            Issue.record("expected a probe and a failure, got \(first)")
            return
        }
        #expect(error.kind == .unavailable)
        // A probe is already in flight: the next caller fails without starting another.
        guard case .fail([3], _) = machine.acquire(3, now: 3).first else {
            Issue.record("expected a fast failure")
            return
        }
        let connection = FakeConnection()
        #expect(machine.connected(connection, now: 4).isEmpty && machine.idleCount == 1)
        guard case .lease(let leased, to: 4) = machine.acquire(4, now: 5).first else {
            Issue.record("expected the probe's connection to be leased")
            return
        }
        #expect(leased === connection)
    }

    @Test func idleConnectionThatBreaksIsForgottenAtOnce() {
        var machine = makeMachine()
        _ = machine.acquire(1, now: 0)
        let connection = FakeConnection()
        _ = machine.connected(connection, now: 0)
        _ = machine.release(connection, isBroken: false, now: 1)
        guard case .close(let closed) = machine.connectionBroke(connection).first else {
            Issue.record("expected the broken idle connection to close")
            return
        }
        #expect(closed.first === connection && machine.openCount == 0)
    }
}
