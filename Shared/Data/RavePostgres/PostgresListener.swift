import RaveTelemetry
import RaveTransport
import Synchronization

/// LISTEN/NOTIFY on a dedicated connection: one `AsyncStream` per channel, re-LISTENing after reconnects.
///
/// Notifications sent while the connection is down are lost (PostgreSQL does not queue them for absent
/// listeners); callers that cannot miss events must re-read state after a reconnect.
public final class PostgresListener: Sendable {
    private struct State {
        var streams: [String: [AsyncStream<PostgresNotification>.Continuation]] = [:]
        var connection: PostgresConnection?
        var isShutDown = false
        var connections: UInt64 = 0
        var listeningGeneration: UInt64?
    }

    private let connectionString: String
    private let loop: EventLoop
    private let logger: Logger
    private let state = Mutex(State())
    /// The reconnect loop, when one runs.
    private let background = OwnedTasks()

    public init(connectionString: String, loop: EventLoop, logger: Logger = Logger(label: "postgres-listener")) {
        self.connectionString = connectionString
        self.loop = loop
        self.logger = logger
    }

    /// Notifications on `channel` from now on; the stream ends when the listener shuts down.
    public func notifications(channel: String) async throws -> AsyncStream<PostgresNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: PostgresNotification.self)
        let isFirst = state.withLock { state in
            state.streams[channel, default: []].append(continuation)
            return state.streams[channel]?.count == 1
        }
        let connection = try await currentConnection()
        if isFirst {
            try await connection.runScript("LISTEN \(PostgresConnection.quoteIdentifier(channel))")
        }
        return stream
    }

    /// The same number for exactly as long as one connection listens on every channel without a break; nil while
    /// the listener is down or (re)connecting.
    ///
    /// A cache invalidated by notifications checks it: a different value (or nil) means notifications may have
    /// been missed since the cache was filled.
    public var listeningGeneration: UInt64? { state.withLock { $0.listeningGeneration } }

    /// Closes the connection and finishes every stream.
    public func shutdown() {
        let (connection, continuations) = state.withLock { state in
            state.isShutDown = true
            defer { state.streams = [:] }
            return (state.connection, state.streams.values.flatMap { $0 })
        }
        connection?.close()
        for continuation in continuations { continuation.finish() }
        background.cancelAll()
    }

    /// Returns once a reconnect loop the listener was running has ended; call after `shutdown()`.
    public func waitForBackgroundWork() async {
        await background.waitUntilDone()
    }

    private func currentConnection() async throws -> PostgresConnection {
        if let connection = state.withLock({ $0.connection }), !connection.isClosed { return connection }
        let connection = try await PostgresConnection.connect(to: connectionString, on: loop, logger: logger)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                connection.notificationHandler = { [weak self] in self?.deliver($0) }
                let closed = ObjectIdentifier(connection)
                connection.closeHandler = { [weak self] _ in
                    self?.state.withLock { state in
                        if state.connection.map(ObjectIdentifier.init) == closed { state.listeningGeneration = nil }
                    }
                    self?.reconnectSoon()
                }
                continuation.resume()
            }
        }
        let (channels, stale) = state.withLock { state in
            let stale = state.connection
            state.connection = connection
            return (Array(state.streams.keys), stale)
        }
        stale?.close()
        for channel in channels {
            try await connection.runScript("LISTEN \(PostgresConnection.quoteIdentifier(channel))")
        }
        state.withLock { state in
            guard state.connection === connection, !connection.isClosed else { return }
            state.connections += 1
            state.listeningGeneration = state.connections
        }
        return connection
    }

    private func deliver(_ notification: PostgresNotification) {
        let continuations = state.withLock { $0.streams[notification.channel] ?? [] }
        for continuation in continuations { continuation.yield(notification) }
    }

    /// Reconnects with a growing pause until the server is back, then LISTENs on every channel again.
    private func reconnectSoon() {
        // Owned by the listener: `shutdown()` cancels it (its pause ends at once) and `waitForBackgroundWork()`
        // awaits it.
        background.spawn { [self] in
            var pause = Duration.milliseconds(100)
            while !state.withLock({ $0.isShutDown }) {
                do {
                    _ = try await currentConnection()
                    return
                } catch {
                    logger.warning("listener reconnect failed", [("error", "\(error)")])
                    try? await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(5))
                }
            }
        }
    }
}
