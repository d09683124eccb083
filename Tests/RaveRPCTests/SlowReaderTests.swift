import RaveServices
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization
import Testing

@testable import RaveRPC

/// A client that keeps sending requests but never reads their responses.
@Suite("Slow readers", .timeLimit(.minutes(1)))
struct SlowReaderTests {
    @Test func peerThatStopsReadingLeavesServerOutputBoundedAndOthersServed() async throws {
        let server = try InspectableServer()
        defer { server.close() }

        // Any buffered output stops this client's own reading; it queues far more than the sockets hold,
        // so once the server pushes back it never reads again.
        var options = ChannelOptions()
        options.highWaterMark = 0
        options.lowWaterMark = 0
        let client = try await Connector.connect(
            to: "127.0.0.1", port: server.port, in: server.group, tls: try server.certificates.clientTLS(),
            options: options, handler: DiscardingHandler())
        let payload = [UInt8](repeating: 0xA5, count: 256 << 10)
        var requests: [UInt8] = []
        let handshake = RpcV1.Handshake(protocolVersion: 1, maxFrameSize: UInt32(Frame.defaultMaxFrameSize))
        Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes()).append(to: &requests)
        let body = RpcV1.Request(
            method: echoMethod, timeoutMs: 0, metadata: [:],
            payload: EchoV1.EchoRequest(payload: payload).protobufBytes()
        ).protobufBytes()
        for streamID in UInt32(1)...256 {
            Frame(type: .request, streamID: streamID, body: body).append(to: &requests)
        }
        let flood = requests
        await onLoop(client) {
            $0.write(flood)
            $0.flush()
        }

        let connection = try #require(await server.waitForConnection())
        #expect(await poll(within: .seconds(20)) { await onLoop(connection.channel) { !$0.isWritable } })

        // Responses already computed may land on top of the high-water mark, but reading stops once it is
        // passed, so at most one read budget of requests (and the responses they make) can follow.
        let channelOptions = server.configuration.channelOptions
        let responseSize = Frame.wireSize(bodyCount: body.count + 16)
        let bound = channelOptions.highWaterMark + channelOptions.readBudget + (64 << 10) + responseSize
        var largest = 0
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(25))
            largest = max(largest, await onLoop(connection.channel) { $0.bufferedOutboundBytes })
        }
        #expect(largest > channelOptions.lowWaterMark)
        #expect(largest <= bound, "the server buffered \(largest) bytes for a peer that does not read")

        let other = try await RPCConnection.connect(
            host: "127.0.0.1", port: server.port, tls: try server.certificates.clientTLS(), group: server.group,
            logger: Logger(label: "test.client", level: .error))
        #expect(try await echoAfterDelay(other, delayMs: 0, payload: [8]) == [8])
        other.close()
        await onLoop(client) { $0.closeNow() }
        #expect(await poll(within: .seconds(10)) { server.registry.all.isEmpty })
    }
}

/// An RPC server assembled from its parts, as `RPCServer.start()` does, so the test can reach the
/// server-side channels.
private final class InspectableServer: Sendable {
    let certificates: TestCertificates
    let group: EventLoopGroup
    /// Large requests from the first frame on: this is about output back pressure, not the early frame limit.
    let configuration = {
        var configuration = RPCServerConfiguration()
        configuration.earlyMaxFrameSize = configuration.maxFrameSize
        return configuration
    }()
    let registry = ConnectionRegistry()
    private let listener: Listener

    init() throws {
        certificates = try TestCertificates()
        group = try EventLoopGroup(loopCount: 2)
        let router = RPCRouter(
            services: [TestEchoService()], access: .open, configuration: configuration,
            logger: Logger(label: "test.server", level: .error), observer: SilentServerObserver())
        let registry = self.registry
        listener = try Listener(
            group: group, host: "127.0.0.1", port: 0, tls: try certificates.serverTLS(),
            options: configuration.channelOptions
        ) { channel in
            channel.setHandler(ServerConnection(channel: channel, router: router, registry: registry))
        }
    }

    var port: Int { listener.localPort }

    func waitForConnection() async -> ServerConnection? {
        _ = await poll(within: .seconds(10)) { !registry.all.isEmpty }
        return registry.all.first
    }

    func close() {
        listener.close()
        group.shutdown()
    }
}

/// Reads nothing on purpose; the channel's own back pressure keeps it from reading at all.
private final class DiscardingHandler: ChannelHandler {
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelInactive(_ channel: Channel, error: TransportError?) {}
}

/// Runs `body` on the channel's loop and returns its result.
private func onLoop<Result: Sendable>(
    _ channel: Channel, _ body: @escaping @Sendable (Channel) -> Result
) async -> Result {
    await withCheckedContinuation { continuation in
        channel.loop.execute { continuation.resume(returning: body(channel)) }
    }
}

/// Polls `condition` every 5 ms until it holds or `limit` passes; returns whether it held.
private func poll(within limit: Duration, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
