import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import RaveWire
import Synchronization
import Testing

@Suite("Calls over TLS", .timeLimit(.minutes(1)))
struct CallTests {
    @Test func echoRoundTripAndHealth() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        let response = try await EchoV1.EchoClient(caller: connection).echo(EchoV1.EchoRequest(payload: [1, 2, 3]))
        #expect(response.payload == [1, 2, 3])
        let health = try await RpcV1.HealthClient(caller: connection).check(RpcV1.HealthCheckRequest())
        #expect(health.status == .serving)
        let unknown = try await RpcV1.HealthClient(caller: connection).check(
            RpcV1.HealthCheckRequest(service: "rave.nothing.v1.Nothing"))
        #expect(unknown.status == .serviceUnknown)
        connection.close()
        await server.stop()
    }

    @Test func thousandConcurrentCallsCompleteOutOfOrder() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        let order = CompletionOrder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let payload = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
                    let delay = UInt32.random(in: 0...300)
                    let echoed = try await echoAfterDelay(connection, delayMs: delay, payload: payload)
                    #expect(echoed == payload)
                    order.indices.withLock { $0.append(index) }
                }
            }
            try await group.waitForAll()
        }
        let completed = order.indices.withLock { $0 }
        #expect(completed.count == 1000)
        #expect(completed != completed.sorted())
        connection.close()
        await server.stop()
    }

    @Test func unknownMethodIsUnimplemented() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        await #expect {
            try await connection.call(method: "rave.echo.v1.Echo/Nope", request: [], options: CallOptions())
        } throws: { ($0 as? RPCError)?.code == .unimplemented }
        connection.close()
        await server.stop()
    }

    @Test func undecodableRequestPayloadIsInvalidArgument() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        await #expect {
            try await connection.call(method: echoMethod, request: [0xFF, 0xFF, 0xFF], options: CallOptions())
        } throws: { ($0 as? RPCError)?.code == .invalidArgument }
        connection.close()
        await server.stop()
    }

    @Test func handlerStatusReachesTheCaller() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        await #expect {
            try await EchoV1.EchoClient(caller: connection).fail(EchoV1.FailRequest(code: .notFound, message: "gone"))
        } throws: { ($0 as? RPCError) == RPCError(.notFound, "gone") }
        connection.close()
        await server.stop()
    }

    @Test func deadlineExceededFailsTheCallInTime() async throws {
        // The handler never answers by itself; once the clock passes the call's deadline the call fails.
        let clock = ManualLoopClock()
        let server = try TestServer(clock: clock, calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let call = Task { try await echoAfterDelay(connection, delayMs: 10_000, timeout: .seconds(2)) }
        await server.calls.waitUntilStarted(1)
        await clock.advance(by: .seconds(2))
        await #expect { try await call.value } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        connection.close()
        await server.stop()
    }

    @Test func cancellingTheCallingTaskCancelsTheCall() async throws {
        let server = try TestServer(calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let call = Task { try await echoAfterDelay(connection, delayMs: 10_000) }
        await server.calls.waitUntilStarted(1)
        call.cancel()
        await #expect { try await call.value } throws: { ($0 as? RPCError)?.code == .cancelled }
        connection.close()
        await server.stop()
    }

    @Test func pingMeasuresARoundTrip() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        // How long it took is for benchmarks; that it measured something is for this test.
        let roundTrip = try await connection.ping()
        #expect(roundTrip > .zero)
        connection.close()
        await server.stop()
    }

    @Test func excessStreamsAreRefusedNotProcessed() async throws {
        // Both slow calls are held in their handlers while the third arrives: with a fixed pause and a fixed handler
        // delay, a loaded machine either had not started them yet or had already finished one.
        let server = try TestServer(
            configuration: RPCServerConfiguration(maxConcurrentStreams: 2), calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let slow = (0..<2).map { _ in Task { try await echoAfterDelay(connection, delayMs: 500) } }
        await server.calls.waitUntilStarted(2)
        await #expect { try await echoAfterDelay(connection, delayMs: 0) } throws: {
            let error = $0 as? RPCError
            return error?.code == .resourceExhausted && error?.notProcessed == true
        }
        #expect(server.calls.startedCount == 2)
        server.calls.release()
        for task in slow { #expect(try await task.value == [1]) }
        connection.close()
        await server.stop()
    }

    @Test func clientWithoutCertificateIsRejectedByMutualTLSPort() async throws {
        let server = try TestServer(mutualTLS: true)
        await #expect(throws: RPCError.self) {
            let connection = try await server.connect(withCertificate: false)
            // TLS 1.3 clients learn of the rejection only when they read: the first call must fail.
            _ = try await echoAfterDelay(connection, delayMs: 0, timeout: .seconds(2))
        }
        let trusted = try await server.connect(withCertificate: true)
        #expect(try await echoAfterDelay(trusted, delayMs: 0) == [1])
        trusted.close()
        await server.stop()
    }
}

/// The order in which concurrent calls finished.
final class CompletionOrder: Sendable {
    let indices = Mutex<[Int]>([])
}
