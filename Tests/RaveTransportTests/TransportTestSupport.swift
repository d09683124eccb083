import Foundation
import Synchronization
import Testing

@testable import RaveTransport

/// A fresh directory under the system temp dir, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "rave-transport-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Certificates for one test: our CA with every project name, and an unrelated CA with a "client" leaf.
struct TestCertificates {
    let directory = TemporaryDirectory()
    var ours: String { directory.path + "/ours" }
    var other: String { directory.path + "/other" }

    init() throws {
        try DevelopmentCertificates.write(to: ours)
        try DevelopmentCertificates.write(to: other, services: ["client"], authorityName: "Unrelated CA")
    }

    func server(_ name: String = "gateway", mutual: Bool = false) throws -> TLSContext {
        try TLSContext(
            .server(
                certificateChainPath: "\(ours)/\(name).pem", privateKeyPath: "\(ours)/\(name)-key.pem",
                trustRootsPath: mutual ? "\(ours)/ca.pem" : nil, requireClientCertificate: mutual))
    }

    func client(certificateFrom directory: String? = nil) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(ours)/ca.pem",
                certificateChainPath: directory.map { "\($0)/client.pem" },
                privateKeyPath: directory.map { "\($0)/client-key.pem" }))
    }
}

/// Echoes every byte back, flushing once per read batch.
final class EchoHandler: ChannelHandler {
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) { channel.write(bytes) }
    func channelReadComplete(_ channel: Channel) { channel.flush() }
    func channelInactive(_ channel: Channel, error: TransportError?) {}
}

/// Records what a channel saw, readable from the test's thread.
final class RecordingHandler: ChannelHandler, Sendable {
    struct Observations {
        var received: [UInt8] = []
        var activeCount = 0
        var inactiveCount = 0
        var inactiveError: TransportError?
        var peerCommonName: String?
        var peerCertificate: PeerCertificate?
        var protocolVersion: String?
        var cipherSuite: String?
        var applicationProtocol: String?
    }

    let observations = Mutex(Observations())
    let echoes: Bool

    init(echoes: Bool = false) { self.echoes = echoes }

    var snapshot: Observations { observations.withLock { $0 } }

    func channelActive(_ channel: Channel) {
        observations.withLock {
            $0.activeCount += 1
            $0.peerCommonName = channel.peerCertificateCommonName
            $0.peerCertificate = channel.peerCertificate
            $0.protocolVersion = channel.negotiatedProtocolVersion
            $0.cipherSuite = channel.negotiatedCipherSuite
            $0.applicationProtocol = channel.negotiatedApplicationProtocol
        }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        observations.withLock { $0.received.append(contentsOf: bytes) }
        if echoes { channel.write(bytes) }
    }

    func channelReadComplete(_ channel: Channel) {
        if echoes { channel.flush() }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        observations.withLock {
            $0.inactiveCount += 1
            $0.inactiveError = error
        }
    }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
func eventually(within seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}

/// Runs `body` on the channel's loop and returns its result.
func onLoop<Result: Sendable>(_ channel: Channel, _ body: @escaping @Sendable (Channel) -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        channel.loop.execute { continuation.resume(returning: body(channel)) }
    }
}

/// Holds the channels a listener accepted, for tests that inspect the server side.
final class AcceptedChannels: Sendable {
    let channels = Mutex<[Channel]>([])
    var first: Channel? { channels.withLock { $0.first } }
    var count: Int { channels.withLock { $0.count } }
}

/// A listener whose accepted channels get `makeHandler()`; closes with the test.
func makeListener(
    group: EventLoopGroup, tls: TLSContext?, options: ChannelOptions = ChannelOptions(),
    accepted: AcceptedChannels = AcceptedChannels(),
    makeHandler: @escaping @Sendable () -> any ChannelHandler = { EchoHandler() }
) throws -> Listener {
    try Listener(group: group, host: "127.0.0.1", port: 0, tls: tls, options: options) { channel in
        accepted.channels.withLock { $0.append(channel) }
        channel.setHandler(makeHandler())
    }
}
