import RaveRPC
import RaveTestSupport
import RaveTransport
import Testing

/// Connection limits count a connection from `accept`, through its TLS handshake, until it closes.
@Suite("Connection limits", .timeLimit(.minutes(1)))
struct ConnectionLimitTests {
    /// Opens `count` TCP connections that never start TLS: each sits in the server's handshake until it times out.
    static func halfOpen(_ count: Int, port: Int) async throws -> [LoopbackSocket] {
        try await onOwnThread { try (0..<count).map { _ in try LoopbackSocket(port: port) } }
    }

    /// Whether a TLS connection can be made and serves an echo.
    static func echoWorks(_ server: TestServer) async -> Bool {
        guard let connection = try? await server.connect() else { return false }
        defer { connection.close() }
        return (try? await echoAfterDelay(connection, delayMs: 0, timeout: .seconds(5))) == [1]
    }

    @Test func connectionsInTheirTLSHandshakeCountTowardThePerAddressLimit() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxConnectionsPerAddress = 3
        let server = try TestServer(configuration: configuration)
        var waiting = try await Self.halfOpen(3, port: server.port)
        try await eventually { server.server.connectionCounts.handshaking == 3 }

        // A fourth connection from the same address is closed at accept, before TLS.
        #expect(await Self.echoWorks(server) == false)
        #expect(server.server.refusedConnections(.perAddress) >= 1)

        // When one of the waiting connections goes, there is room again.
        waiting.removeFirst().close()
        try await eventually { await Self.echoWorks(server) }
        for socket in waiting { socket.close() }
        await server.stop()
    }

    @Test func handshakesInProgressAreCappedPerAddress() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxHandshakesPerAddress = 2
        let server = try TestServer(configuration: configuration)
        let waiting = try await Self.halfOpen(2, port: server.port)
        try await eventually { server.server.connectionCounts.handshaking == 2 }
        #expect(await Self.echoWorks(server) == false)
        #expect(server.server.refusedConnections(.handshakesPerAddress) >= 1)
        for socket in waiting { socket.close() }
        try await eventually { await Self.echoWorks(server) }
        await server.stop()
    }

    @Test func handshakesInProgressAreCappedInTotal() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxHandshakes = 2
        let server = try TestServer(configuration: configuration)
        let waiting = try await Self.halfOpen(2, port: server.port)
        try await eventually { server.server.connectionCounts.handshaking == 2 }
        #expect(await Self.echoWorks(server) == false)
        #expect(server.server.refusedConnections(.handshakes) >= 1)
        for socket in waiting { socket.close() }
        try await eventually { await Self.echoWorks(server) }
        await server.stop()
    }

    @Test func halfOpenConnectionsAreClosedAfterTheHandshakeTimeout() async throws {
        var configuration = RPCServerConfiguration()
        configuration.handshakeTimeout = .milliseconds(300)
        let server = try TestServer(configuration: configuration)
        let waiting = try await Self.halfOpen(2, port: server.port)
        let closedByTheServer = try await onOwnThread { waiting.map { $0.waitForClose() } }
        #expect(closedByTheServer == [true, true])
        try await eventually { server.server.connectionCounts.open == 0 }
        for socket in waiting { socket.close() }
        await server.stop()
    }
}
