import Foundation
import RaveMessages
import RaveRPC
import RaveTelemetry
import RaveTransport
import Testing

@testable import RaveRuntime

/// Metrics and logs name methods from a closed set, whatever names clients send.
@Suite(.timeLimit(.minutes(2)))
struct MetricLabelTests {
    /// A server like the gateway's: its fallback answers every method it does not serve (here UNAUTHENTICATED).
    final class FallbackServer: Sendable {
        let directory: String
        let group: EventLoopGroup
        let server: RPCServer
        let registry = MetricsRegistry()

        init(fallbackMethodNames: Set<String> = [], logger: Logger = Logger(label: "test", level: .error)) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-labels-\(UUID())").path
            try DevelopmentCertificates.write(to: directory, services: ["labels"])
            group = try EventLoopGroup(loopCount: 1)
            var configuration = RPCServerConfiguration()
            configuration.fallbackMethodNames = fallbackMethodNames
            configuration.requestLogLevel = .info
            server = RPCServer(
                configuration: configuration, services: [], access: .open,
                tls: try TLSContext(
                    .server(
                        certificateChainPath: "\(directory)/labels.pem", privateKeyPath: "\(directory)/labels-key.pem",
                        trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: false)),
                group: group, logger: logger, observer: RPCMetrics(registry: registry),
                fallback: { _, _ in throw RPCError.unauthenticated("sign in first") })
            try server.start()
        }

        func connect() async throws -> RPCConnection {
            try await RPCConnection.connect(
                host: "127.0.0.1", port: server.localPort,
                tls: try TLSContext(.client(trustRootsPath: "\(directory)/ca.pem")), group: group)
        }

        func stop() async {
            await server.shutdown()
            group.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Calls `method` and returns the status it fails with.
    static func status(_ connection: RPCConnection, _ method: String) async -> StatusCode? {
        do {
            _ = try await connection.call(method: method, request: [], options: CallOptions(maxRetries: 0))
            return .ok
        } catch {
            return error.code
        }
    }

    @Test func tenThousandInventedMethodNamesMakeOneSeries() async throws {
        let server = try FallbackServer()
        let connection = try await server.connect()
        let padding = String(repeating: "x", count: 1000)
        for chunk in stride(from: 0, to: 10_000, by: 500) {
            await withTaskGroup(of: Void.self) { group in
                for index in chunk..<chunk + 500 {
                    group.addTask { _ = await Self.status(connection, "rave.bogus.v1.Bogus/M\(index)\(padding)") }
                }
            }
        }
        let text = server.registry.exposition()
        let requestSeries = text.split(separator: "\n").filter { $0.hasPrefix("rpc_server_requests_total{") }
        #expect(
            requestSeries == [
                "rpc_server_requests_total{rpc_method=\"unknown\",rpc_status=\"UNAUTHENTICATED\"} 10000"
            ])
        #expect(text.utf8.count < 16 << 10, "the exposition is \(text.utf8.count) bytes")
        connection.close()
        await server.stop()
    }

    @Test func methodsTheFallbackRoutesKeepTheirName() async throws {
        let routed = "rave.echo.v1.Echo/Echo"
        let server = try FallbackServer(fallbackMethodNames: [routed])
        let connection = try await server.connect()
        #expect(await Self.status(connection, routed) == .unauthenticated)
        #expect(await Self.status(connection, "rave.echo.v1.Echo/Nope") == .unauthenticated)
        let text = server.registry.exposition()
        #expect(text.contains("rpc_server_requests_total{rpc_method=\"\(routed)\",rpc_status=\"UNAUTHENTICATED\"} 1\n"))
        #expect(text.contains("rpc_server_requests_total{rpc_method=\"unknown\",rpc_status=\"UNAUTHENTICATED\"} 1\n"))
        connection.close()
        await server.stop()
    }

    @Test func logLinesCarryAShortPrefixOfALongMethodName() async throws {
        let sink = LogSink.capturing()
        let server = try FallbackServer(logger: Logger(label: "test", level: .info, sink: sink))
        let connection = try await server.connect()
        let method = "rave.bogus.v1.Bogus/" + String(repeating: "é", count: 30 << 10)
        #expect(await Self.status(connection, method) == .unauthenticated)
        connection.close()
        await server.stop()
        let finished = sink.capturedLines.filter { $0.contains("call finished") }
        #expect(finished.count == 1)
        for line in finished {
            #expect(line.utf8.count < 1024, "a log line of \(line.utf8.count) bytes")
            #expect(line.contains("…(\(method.utf8.count) bytes)"))
        }
    }

    @Test func printableMethodNamesAreCutOnACharacterBoundary() {
        #expect(MethodNames.printable("rave.echo.v1.Echo/Echo") == "rave.echo.v1.Echo/Echo")
        // 127 ASCII bytes then two-byte characters: the cut falls inside one and backs up to its start.
        let name = String(repeating: "a", count: 127) + String(repeating: "é", count: 10)
        #expect(MethodNames.printable(name) == String(repeating: "a", count: 127) + "…(147 bytes)")
    }
}
