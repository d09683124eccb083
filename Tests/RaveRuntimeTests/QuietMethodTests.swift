import Foundation
import RaveRPC
import RaveTelemetry
import RaveTransport
import Testing

@testable import RaveRuntime

/// Methods peers poll on a timer are logged only when they fail; every other call is logged as it finishes.
@Suite(.timeLimit(.minutes(2)))
struct QuietMethodTests {
    static let poll = "test.v1.Feed/Poll"
    static let other = "test.v1.Feed/Read"

    @Test func anOKAnswerToAPolledMethodIsNotLoggedAtInfoButItsFailureIs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-quiet-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["quiet"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let sink = LogSink.capturing()
        var configuration = RPCServerConfiguration()
        configuration.fallbackMethodNames = [Self.poll, Self.other]
        configuration.quietMethods.insert(Self.poll)
        configuration.requestLogLevel = .info
        let server = RPCServer(
            configuration: configuration, services: [], access: .open,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/quiet.pem", privateKeyPath: "\(directory)/quiet-key.pem",
                    trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: false)),
            group: group, logger: Logger(label: "test", level: .info, sink: sink),
            fallback: { request, _ in
                guard request.isEmpty else { throw RPCError.unavailable("the feed is behind") }
                return []
            })
        try server.start()
        let connection = try await RPCConnection.connect(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(.client(trustRootsPath: "\(directory)/ca.pem")),
            group: group)
        let options = CallOptions(maxRetries: 0)
        _ = try await connection.call(method: Self.poll, request: [], options: options)
        _ = try await connection.call(method: Self.other, request: [], options: options)
        await #expect(throws: RPCError.self) {
            _ = try await connection.call(method: Self.poll, request: [1], options: options)
        }
        _ = try await connection.call(method: "rave.rpc.v1.Health/Check", request: [], options: options)
        connection.close()
        await server.shutdown()

        let finished = sink.capturedLines.filter { $0.contains("call finished") }
        let polls = finished.filter { $0.contains(Self.poll) }
        #expect(polls.count == 1, "only the failed poll is logged: \(finished)")
        #expect(polls.first?.contains("level=info") == true && polls.first?.contains("status=unavailable") == true)
        #expect(finished.contains { $0.contains(Self.other) })
        #expect(!finished.contains { $0.contains("Health/Check") }, "health checks are polls too")
    }
}
