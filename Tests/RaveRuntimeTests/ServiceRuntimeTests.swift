import Foundation
import RaveMessages
import RavePostgres
import RaveProtobuf
import RaveRPC
import RaveTelemetry
import RaveTransport
import Testing

@testable import RaveRuntime

@Suite struct RPCMetricsTests {
    @Test func callsAreCountedPerMethodAndStatus() throws {
        let registry = MetricsRegistry()
        let metrics = RPCMetrics(registry: registry)
        metrics.connectionCountChanged(to: 2)
        for code in [StatusCode.ok, .ok, .notFound] {
            metrics.callStarted(method: "rave.echo.v1.Echo/Say")
            metrics.callFinished(method: "rave.echo.v1.Echo/Say", code: code, nanoseconds: 1_500_000)
        }
        metrics.callStarted(method: "rave.nope.v1.X/Y")
        metrics.callFinished(method: "rave.nope.v1.X/Y", code: .unimplemented, nanoseconds: 0)
        metrics.callStarted(method: "rave.echo.v1.Echo/Slow")

        let text = registry.exposition()
        #expect(text.contains("rpc_server_requests_total{rpc_method=\"rave.echo.v1.Echo/Say\",rpc_status=\"OK\"} 2\n"))
        #expect(
            text.contains(
                "rpc_server_requests_total{rpc_method=\"rave.echo.v1.Echo/Say\",rpc_status=\"NOT_FOUND\"} 1\n"))
        #expect(text.contains("rpc_server_requests_total{rpc_method=\"unknown\",rpc_status=\"UNIMPLEMENTED\"} 1\n"))
        #expect(
            text.contains(
                "rpc_server_duration_bucket{rpc_method=\"rave.echo.v1.Echo/Say\",rpc_status=\"OK\",le=\"0.0025\"} 2\n"))
        #expect(text.contains("rpc_server_active_requests 1\n"))
        #expect(text.contains("rpc_server_connections 2\n"))
    }

    @Test func statusNamesFollowTheProtocol() {
        #expect(RPCMetrics.statusName(.ok) == "OK")
        #expect(RPCMetrics.statusName(.deadlineExceeded) == "DEADLINE_EXCEEDED")
        #expect(RPCMetrics.statusName(.unauthenticated) == "UNAUTHENTICATED")
    }
}

@Suite struct PostgresErrorBridgeTests {
    @Test(arguments: [
        ("23505", StatusCode.alreadyExists), ("23514", .invalidArgument), ("23502", .invalidArgument),
        ("23503", .failedPrecondition), ("22001", .invalidArgument), ("40001", .aborted), ("40P01", .aborted),
    ])
    func serverErrorsMapBySQLState(sqlState: String, code: StatusCode) {
        let error = PostgresError(.server, "duplicate key", sqlState: sqlState, constraint: "users_email_key")
        #expect(RPCError(mapping: error, requestID: "r1").code == code)
    }

    @Test func poolAndConnectionFailuresMapToTheirStatus() {
        #expect(RPCError(mapping: PostgresError.poolExhausted, requestID: "r").code == .resourceExhausted)
        #expect(RPCError(mapping: PostgresError.connectionClosed, requestID: "r").code == .unavailable)
        #expect(RPCError(mapping: PostgresError(.queryTimeout, "slow"), requestID: "r").code == .deadlineExceeded)
    }

    /// Whatever the status, the message is ours: not the server's text, not a constraint or table name, not
    /// libpq's connection detail.
    @Test(arguments: [
        "23505", "23514", "23502", "23503", "22001", "22003", "22P02", "22021", "40001", "57014", "57P01", "08006",
        "53300", "22P03",
    ])
    func messagesNeverCarryDatabaseText(sqlState: String) {
        let error = PostgresError(
            .server, "new row for relation \"users\" violates check constraint \"users_display_name_check\"",
            sqlState: sqlState, detail: "Failing row contains (secret, data).", constraint: "users_display_name_check")
        let status = RPCError(mapping: error, requestID: "r")
        for leaked in ["users", "relation", "constraint", "secret", "Failing", "violates"] {
            #expect(!status.message.contains(leaked), "\(sqlState): \(status.message)")
        }
        let lost = PostgresError(
            .connectionFailed, "connection to server at \"db.internal\" (10.0.0.7), port 5432 failed")
        #expect(RPCError(mapping: lost, requestID: "r").message == "the database is unavailable; retry later")
    }

    @Test func internalErrorsHideTheirDetail() {
        let error = PostgresError(.server, "relation \"secret_table\" does not exist", sqlState: "42P01")
        let status = RPCError(mapping: error, requestID: "req-42")
        #expect(status.code == .internal)
        #expect(!status.message.contains("secret_table"))
        #expect(status.message.contains("req-42"))
    }
}

@Suite struct ServiceRuntimeTests {
    /// A scratch directory with development certificates, removed at the end of the test.
    func withCertificates<T>(_ body: (String) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-runtime-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["runtime-test", "gateway"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try await body(directory)
    }

    @Test func servesHealthOverMutualTLSAndCountsItInMetrics() async throws {
        try await withCertificates { directory in
            let environment = [
                "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
            ]
            let runtime = try await ServiceRuntime.start(name: "runtime-test", environment: environment) { _ in [] }
            let running = Task { try await runtime.run() }

            let clientGroup = try EventLoopGroup(loopCount: 1)
            let tls = try TLSContext(
                .client(
                    trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gateway.pem",
                    privateKeyPath: "\(directory)/gateway-key.pem"))
            let client = RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
            let response = try await client.call(
                method: "rave.rpc.v1.Health/Check", request: RpcV1.HealthCheckRequest().protobufBytes(),
                options: CallOptions(timeout: .seconds(5)))
            #expect(try RpcV1.HealthCheckResponse(protobufBytes: response).status == .serving)

            let adminPort = runtime.adminPort
            let metrics = try await onOwnThread {
                let socket = try TestSocket(port: adminPort)
                defer { socket.close() }
                try socket.send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
                return socket.readUntilClosed()
            }
            #expect(metrics.contains("rpc_method=\"rave.rpc.v1.Health/Check\",rpc_status=\"OK\"}"))
            let ready = try await onOwnThread {
                let socket = try TestSocket(port: adminPort)
                defer { socket.close() }
                try socket.send("GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n")
                return socket.readUntilClosed()
            }
            #expect(ready.hasPrefix("HTTP/1.1 200 OK"))

            client.close()
            runtime.triggerShutdown()
            try await running.value
            clientGroup.shutdown()
            #expect(throws: (any Error).self) { try TestSocket(port: adminPort) }
        }
    }

    @Test func missingCertificatesStopStartupWithTheirPath() async throws {
        let environment = [
            "RAVE_CERT_DIR": "/nonexistent/certs", "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "critical",
        ]
        await #expect {
            _ = try await ServiceRuntime.start(name: "runtime-test", environment: environment) { _ in [] }
        } throws: { error in
            "\(error)".contains("/nonexistent/certs")
        }
    }
}
