import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTransport
import Synchronization

/// The RPC server as a `Service`: listens in `run()`, drains (GOAWAY, finish in-flight calls) on shutdown.
public final class RPCServerService: Service {
    public let name = "rpc-server"
    public let server: RPCServer
    private let stopped = ShutdownLatch()
    private let started = Mutex(false)

    public init(server: RPCServer) {
        self.server = server
    }

    /// Opens the port now (instead of in `run()`), so a port conflict stops start-up early; idempotent.
    public func bind() throws(RPCError) {
        try started.withLock { started throws(RPCError) in
            guard !started else { return }
            try server.start()
            started = true
        }
    }

    public func run() async throws {
        try bind()
        await stopped.wait()
        await server.drain()
    }

    public func shutdown() async {
        stopped.open()
    }
}

/// The database pool as a `Service`, so it closes after every service that uses it has stopped.
public final class DatabaseService: Service {
    public let name = "postgres-pool"
    public let pool: PostgresPool
    private let stopped = ShutdownLatch()

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func run() async throws {
        await stopped.wait()
        pool.shutdown()
        // The pool's own attempts and checks end before the runtime stops the event loops they use.
        await pool.waitForBackgroundWork()
    }

    public func shutdown() async {
        stopped.open()
    }
}

extension MetricsRegistry {
    /// Registers the pool's used, idle and waiting connection counts as gauges read at scrape time.
    public func registerGauges(for pool: PostgresPool, name: String = "main") {
        gauge("db.client.connections", help: "Open database connections.", labels: [("pool", name), ("state", "used")])
        {
            let statistics = pool.statistics
            return Double(statistics.open - statistics.idle)
        }
        gauge("db.client.connections", help: "Open database connections.", labels: [("pool", name), ("state", "idle")])
        {
            Double(pool.statistics.idle)
        }
        gauge(
            "db.client.pending_requests", help: "Callers waiting for a database connection.", labels: [("pool", name)]
        ) {
            Double(pool.statistics.waiting)
        }
    }
}

extension MetricsRegistry {
    /// Registers the RPC server's connection admission and input budget as series read at scrape time.
    public func registerGauges(for server: RPCServer) {
        for reason in ConnectionRefusal.all {
            counter(
                "rpc.server.connections_refused_total",
                help: "Connections closed right after accept because they were over a limit, by limit.",
                labels: [("reason", reason.name)]
            ) { Double(server.refusedConnections(reason)) }
        }
        gauge("rpc.server.handshakes", help: "Accepted connections still in their TLS handshake.") {
            Double(server.connectionCounts.handshaking)
        }
        gauge("rpc.server.buffered_input_bytes", help: "Bytes of unfinished frames held by all connections.") {
            Double(server.bufferedInputBytes)
        }
        counter(
            "rpc.server.frames_refused_total",
            help: "Large requests refused RESOURCE_EXHAUSTED because the input budget had no room for them."
        ) { Double(server.framesRefusedForBudget) }
    }
}
