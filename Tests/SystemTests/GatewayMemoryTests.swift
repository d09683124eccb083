import Foundation
import Glibc
import RaveMessages
import RaveRPC
import RaveTestSupport
import RaveTransport
import RaveWire
import Testing

/// A flooded gateway executable gives its memory back once the flood is over (docs/OPERATIONS.md, "Limits").
///
/// Each connection of the flood leaves as much in the gateway's memory as it may. Here rather than in
/// GatewayTests: the flood's TLS handshakes would starve that target's timing-sensitive tests on a small machine.
@Suite("Gateway memory", .timeLimit(.minutes(5)))
struct GatewayMemoryTests {
    /// Resident size may stay this far above the idle size once a flood has ended.
    static let margin = 24 << 20

    @Test func residentMemoryReturnsToItsIdleSizeAfterAFlood() async throws {
        let gateway = try GatewayProcess.start()
        defer { gateway.stop() }
        try await gateway.waitUntilServing()
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let tls = try TLSContext(.client(trustRootsPath: "\(gateway.directory)/ca.pem"))

        // Idle size: after a first small round, so what any first use allocates once is part of it.
        try await Self.flood(port: gateway.port, tls: tls, group: group, connections: 20)
        try await Task.sleep(for: .seconds(2))
        let idle = gateway.residentBytes
        var peak = idle
        for _ in 0..<3 {
            try await Self.flood(
                port: gateway.port, tls: tls, group: group, connections: 400,
                whileOpen: { peak = max(peak, gateway.residentBytes) })
        }
        #expect(peak > idle + Self.margin, "the flood grew the gateway from \(idle) to only \(peak) bytes")
        var settled = gateway.residentBytes
        let end = ContinuousClock.now + .seconds(30)
        while settled > idle + Self.margin && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(250))
            settled = gateway.residentBytes
        }
        #expect(
            settled <= idle + Self.margin,
            "idle \(idle >> 20) MiB, peak \(peak >> 20) MiB, after the flood \(settled >> 20) MiB")
    }

    /// Opens `connections` connections at once; each sends a call with a 60 KiB invented method name, then 60 KiB of
    /// a frame it never finishes; then closes them all.
    static func flood(
        port: Int, tls: TLSContext, group: EventLoopGroup, connections: Int, whileOpen: () -> Void = {}
    ) async throws {
        var handshake = RpcV1.Handshake()
        handshake.protocolVersion = 1
        handshake.maxFrameSize = UInt32(Frame.defaultMaxFrameSize)
        let method = "rave.echo.v1.Echo/" + String(repeating: "m", count: 60 << 10)
        let call = RpcV1.Request(method: method, timeoutMs: 0, metadata: [:], payload: [])
        var bytes = Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes()).encoded()
        bytes += Frame(type: .request, streamID: 1, body: call.protobufBytes()).encoded()
        let unfinished = Frame(type: .request, streamID: 3, body: Array(repeating: 0x22, count: 62 << 10)).encoded()
        bytes += unfinished[..<(60 << 10)]
        let payload = bytes
        // A connection the loaded machine could not complete in time is left out: the flood needs only most.
        let options = {
            var options = ChannelOptions()
            options.handshakeTimeout = 60_000_000_000
            return options
        }()
        let channels = await withTaskGroup(of: Channel?.self) { tasks in
            for _ in 0..<connections {
                tasks.addTask {
                    guard
                        let channel = try? await Connector.connect(
                            to: "127.0.0.1", port: port, in: group, tls: tls, options: options,
                            handler: DiscardingHandler())
                    else { return nil }
                    channel.loop.execute {
                        channel.write(payload)
                        channel.flush()
                    }
                    return channel
                }
            }
            var channels: [Channel] = []
            for await channel in tasks { if let channel { channels.append(channel) } }
            return channels
        }
        try await Task.sleep(for: .milliseconds(500))
        whileOpen()
        for channel in channels { channel.loop.execute { channel.close() } }
        try await Task.sleep(for: .milliseconds(200))
    }
}

/// Reads and drops whatever the gateway sends.
private final class DiscardingHandler: ChannelHandler {
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelInactive(_ channel: Channel, error: TransportError?) {}
}

/// The real gateway executable (built next to this test bundle) with no backends: enough to serve connections.
final class GatewayProcess {
    let directory: String
    let port: Int
    let adminPort: Int
    let process: ChildProcess

    static func start() throws -> GatewayProcess {
        let build = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let executable = build.appendingPathComponent("gateway")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw LoopbackSocketError("no gateway executable next to the tests in \(build.path)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-memory-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["gateway"])
        let port = try LoopbackPort.unused()
        let adminPort = try LoopbackPort.unused()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RAVE_") }
        environment.merge([
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:\(port)",
            "RAVE_ADMIN_LISTEN": "127.0.0.1:\(adminPort)", "RAVE_EVENT_LOOPS": "2", "RAVE_LOG_LEVEL": "critical",
            "RAVE_MEMORY_TRIM_INTERVAL": "1s", "RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "100000",
            "RAVE_MAX_HANDSHAKES_PER_ADDRESS": "100000",
        ]) { $1 }
        // No backend runs: port 1 refuses connections.
        for service in ["identity", "social", "leaderboards", "gifts", "push", "wallet"] {
            environment["RAVE_GATEWAY_\(service.uppercased())_ADDRESSES"] = "127.0.0.1:1"
        }
        let process = try ChildProcess.start(executable.path, environment: environment)
        return GatewayProcess(directory: directory, port: port, adminPort: adminPort, process: process)
    }

    private init(directory: String, port: Int, adminPort: Int, process: ChildProcess) {
        self.directory = directory
        self.port = port
        self.adminPort = adminPort
        self.process = process
    }

    /// Waits until the admin port answers `/healthz` (the protocol port is bound before it).
    func waitUntilServing() async throws {
        let adminPort = self.adminPort
        let end = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < end {
            guard process.isRunning else { throw LoopbackSocketError("the gateway exited during start-up") }
            let status = try? await onOwnThread { try LoopbackSocket.httpGet(port: adminPort, path: "/healthz").status }
            if status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LoopbackSocketError("the gateway did not start within 30 s")
    }

    /// The process's resident set size, from /proc/<pid>/statm.
    var residentBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/statm", encoding: .utf8)
        else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func stop() {
        process.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
