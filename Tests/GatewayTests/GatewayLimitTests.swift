import Foundation
import RaveMessages
import RaveRPC
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gateway

/// What a hostile client can make the gateway hold: metric series, connections, buffered input.
@Suite("Gateway limits", .timeLimit(.minutes(3)))
struct GatewayLimitTests {
    @Test func unknownMethodIsUnimplementedBeforeAnyCredential() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        for method in ["rave.echo.v1.Echo/Nope", "rave.nosuch.v1.Thing/Do", "rave.wallet.v1.WalletInternal/Nope"] {
            let error = await failure(connection, method, [], options: CallOptions(maxRetries: 0))
            #expect(error?.code == .unimplemented, "\(method): \(String(describing: error))")
        }
        // A method that exists still needs its credential.
        let known = await failure(connection, "rave.echo.v1.Echo/Echo", [], options: CallOptions(maxRetries: 0))
        #expect(known?.code == .unauthenticated)
        connection.close()
        try await harness.stop()
    }

    @Test func tenThousandBogusMethodNamesLeaveTheScrapeSmall() async throws {
        let harness = try await GatewayHarness.start([
            "RAVE_GATEWAY_ADDRESS_RATE": "10000000", "RAVE_GATEWAY_ADDRESS_BURST": "10000000",
        ])
        let connection = try await harness.connect()
        let padding = String(repeating: "x", count: 1000)
        for chunk in stride(from: 0, to: 10_000, by: 500) {
            await withTaskGroup(of: Void.self) { group in
                for index in chunk..<chunk + 500 {
                    group.addTask {
                        _ = await failure(
                            connection, "rave.echo.v1.Echo/Bogus\(index)\(padding)", [],
                            options: CallOptions(maxRetries: 0))
                    }
                }
            }
        }
        let port = harness.runtime.adminPort
        let scrape = try await onOwnThread { try LoopbackSocket.httpGet(port: port, path: "/metrics") }
        #expect(scrape.status == 200)
        // Every test of this process shares the registry, and each adds only series of methods that exist.
        #expect(scrape.body.utf8.count < 1 << 20, "the scrape is \(scrape.body.utf8.count) bytes")
        let methods = Set(
            scrape.body.split(separator: "\n").compactMap { line -> Substring? in
                guard let start = line.firstRange(of: "rpc_method=\"")?.upperBound,
                    let end = line[start...].firstIndex(of: "\"")
                else { return nil }
                return line[start..<end]
            })
        let invented = methods.filter { !MethodRoute.knownMethods.contains(String($0)) && $0 != "unknown" }
        #expect(invented.isEmpty, "series for \(invented.count) invented method names")
        #expect(scrape.body.contains("rpc_server_requests_total{rpc_method=\"unknown\",rpc_status=\"UNIMPLEMENTED\"}"))
        connection.close()
        try await harness.stop()
    }

    @Test func connectionsInTheirTLSHandshakeCountTowardThePerAddressLimit() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "3"])
        let port = harness.runtime.rpcPort
        let waiting = try await onOwnThread { try (0..<3).map { _ in try LoopbackSocket(port: port) } }
        // The three never start TLS; a fourth connection from the same address is closed at accept.
        var refused = false
        do {
            let extra = try await harness.connect()
            refused = await failure(extra, "rave.rpc.v1.Health/Check", [], options: CallOptions(maxRetries: 0)) != nil
            extra.close()
        } catch {
            refused = true
        }
        #expect(refused)
        for socket in waiting { socket.close() }
        try await harness.stop()
    }
}
