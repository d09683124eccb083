import Foundation
import RavePostgres
import RaveTestSupport
import Synchronization
import Testing

/// Restarts a PostgreSQL server of the suite's own under load: serialized, since it stops and starts servers.
@Suite(.serialized) struct PostgresRestartTests {
    static let lookup = PostgresStatement(name: "restart_lookup", sql: "SELECT value FROM items WHERE id = $1")

    @Test(arguments: [true, false])
    func poolRecoversAfterTheServerRestartsUnderLoad(immediateStop: Bool) async throws {
        let cluster = try await TemporaryCluster.startOffPool()
        defer { cluster.destroy() }
        var configuration = PostgresPool.Configuration(connectionString: cluster.url)
        configuration.size = 8
        configuration.acquireTimeout = .seconds(3)
        configuration.connectTimeout = .seconds(2)
        configuration.statementTimeout = .seconds(5)
        let pool = try PostgresPool(configuration: configuration, group: TestDatabase.group)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE items (id int8 PRIMARY KEY, value int8 NOT NULL)")
        try await pool.query("INSERT INTO items SELECT n, n * 10 FROM generate_series(1, 100) AS n")

        let log = CallLog()
        let load = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<16 {
                    group.addTask { try await Self.callUntilCancelled(pool, worker: worker, log: log) }
                }
                try await group.waitForAll()
            }
        }
        // The load is under way once calls succeed (a fixed pause could end before the first did).
        try await eventually { log.successes(after: .distantPast) > 0 }

        try await cluster.stopServerOffPool(immediate: immediateStop)
        let stopped = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(750))
        let during = pool.statistics
        try await Task.sleep(for: .milliseconds(750))
        try await cluster.startServerOffPool()
        let restarted = ContinuousClock.now

        // The same pool, no restart: calls succeed again once connections are reopened.
        var recovered = false
        for _ in 0..<100 where !recovered {
            try await Task.sleep(for: .milliseconds(100))
            recovered = log.successes(after: restarted) >= 50
        }
        load.cancel()
        _ = try? await load.value

        #expect(recovered, "the pool did not recover within 10 s of the restart: \(log.summary)")
        let outage = log.failures(between: stopped, and: restarted)
        #expect(!outage.isEmpty, "no call failed while the server was down: \(log.summary) \(during)")
        let unexpected = log.failures(between: .distantPast, and: .distantFuture).filter { $0.kind != .unavailable }
        #expect(unexpected.isEmpty, "failures other than UNAVAILABLE: \(unexpected.prefix(5))")
        // Calls fail while the server is down instead of waiting for it to return: some call that began after the
        // server stopped has already failed before it restarted (an order of events, not a stopwatch).
        let failedWhileDown = outage.filter { $0.at + $0.duration <= restarted }
        #expect(!failedWhileDown.isEmpty, "no call began and failed while the server was down: \(log.summary)")
        #expect(pool.statistics.open <= 8)
    }

    private static func callUntilCancelled(_ pool: PostgresPool, worker: Int, log: CallLog) async throws {
        var id = worker
        while !Task.isCancelled {
            id = id % 100 + 1
            let started = ContinuousClock.now
            do {
                let rows = try await pool.execute(lookup, [id])
                let value = try rows.first?.decode(Int64.self, column: "value")
                #expect(value == Int64(id * 10))
                log.recordSuccess(at: ContinuousClock.now)
            } catch let error as PostgresError {
                if Task.isCancelled && error.kind == .cancelled { return }
                log.recordFailure(
                    CallLog.Failure(at: started, duration: .now - started, kind: error.kind, error: error))
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }
}

/// What the load saw: when calls succeeded, and how and how fast they failed.
final class CallLog: Sendable {
    struct Failure: Sendable, CustomStringConvertible {
        var at: ContinuousClock.Instant
        var duration: Duration
        var kind: PostgresErrorKind
        var error: PostgresError
        var description: String { "\(kind) after \(duration): \(error)" }
    }

    private struct State {
        var successTimes: [ContinuousClock.Instant] = []
        var failures: [Failure] = []
    }

    private let state = Mutex(State())

    func recordSuccess(at time: ContinuousClock.Instant) { state.withLock { $0.successTimes.append(time) } }
    func recordFailure(_ failure: Failure) { state.withLock { $0.failures.append(failure) } }

    func successes(after time: ContinuousClock.Instant) -> Int {
        state.withLock { $0.successTimes.count { $0 > time } }
    }

    func failures(between start: ContinuousClock.Instant, and end: ContinuousClock.Instant) -> [Failure] {
        state.withLock { $0.failures.filter { $0.at >= start && $0.at <= end } }
    }

    var summary: String {
        state.withLock {
            "\($0.successTimes.count) successes, \($0.failures.count) failures: \($0.failures.prefix(3))"
        }
    }
}

extension ContinuousClock.Instant {
    static var distantPast: Self { .now - .seconds(86_400) }
    static var distantFuture: Self { .now + .seconds(86_400) }
}

extension TemporaryCluster {
    /// `pg_ctl` and `initdb` block until the server is up or down; run them off Swift's small cooperative pool.
    static func startOffPool() async throws -> TemporaryCluster {
        try await offPool { try TemporaryCluster.start() }
    }

    func startServerOffPool() async throws { try await Self.offPool { try self.startServer() } }

    func stopServerOffPool(immediate: Bool) async throws {
        try await Self.offPool { try self.stopServer(immediate: immediate) }
    }

    private static func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.start()
        }
    }
}
