import Testing

@testable import RaveTransport

@Suite struct BackPressureTests {
    @Test func peerThatNeverReadsLeavesServerOutputBounded() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let accepted = AcceptedChannels()
        let serverOptions = ChannelOptions()
        let listener = try makeListener(group: group, tls: try certificates.server(), accepted: accepted)
        defer { listener.close() }

        // Any buffered output stops the client's own reading, so once it has queued more than the sockets
        // hold it never reads again: a peer that floods and never reads.
        var clientOptions = ChannelOptions()
        clientOptions.highWaterMark = 0
        clientOptions.lowWaterMark = 0
        let client = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
            options: clientOptions, handler: RecordingHandler())
        let flood = [UInt8](repeating: 0x5a, count: 48 << 20)
        await onLoop(client) {
            $0.write(flood)
            $0.flush()
        }
        #expect(await eventually { accepted.first != nil })
        let server = try #require(accepted.first)
        #expect(await eventually(within: 20) { await onLoop(server) { !$0.isWritable } })

        // Let the loop run a while: the server must not keep reading and buffering echoes.
        let bound = serverOptions.highWaterMark + 2 * (64 << 10)
        for _ in 0..<10 {
            try await Task.sleep(for: .milliseconds(30))
            let buffered = await onLoop(server) { $0.bufferedOutboundBytes }
            #expect(buffered > serverOptions.lowWaterMark)
            #expect(buffered <= bound)
        }
        await onLoop(client) { $0.closeNow() }
        #expect(await eventually { await onLoop(server) { !$0.isActive } })
    }
}
