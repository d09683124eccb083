import Testing

@testable import RaveTransport

@Suite struct NameResolverTests {
    @Test func numericHostsAreReturnedAsTheyAre() async throws {
        #expect(try await NameResolver.addresses(of: "127.0.0.1") == ["127.0.0.1"])
        #expect(try await NameResolver.addresses(of: "::1") == ["::1"])
        #expect(NameResolver.isNumeric("10.1.2.3"))
        #expect(!NameResolver.isNumeric("identity.rave.svc"))
    }

    @Test func namesResolveThroughTheSystemResolver() {
        // /etc/hosts maps localhost on every machine we run on; `addresses(of:)` short-cuts it, so ask directly.
        guard case .addresses(let addresses) = NameResolver.lookUp("localhost") else {
            Issue.record("localhost did not resolve")
            return
        }
        #expect(addresses.contains("127.0.0.1"))
        #expect(Set(addresses).count == addresses.count)
    }

    @Test func anUnknownNameIsAnInvalidAddress() async {
        await #expect(throws: TransportError(.invalidAddress, "")) {
            _ = try await NameResolver.addresses(of: "no-such-host.invalid")
        }
    }

    @Test func connectingToAnUnknownNameFailsCleanly() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        await #expect(throws: TransportError(.invalidAddress, "")) {
            _ = try await Connector.connect(
                to: "no-such-host.invalid", port: 7501, in: group, tls: nil, handler: RecordingHandler())
        }
    }
}
