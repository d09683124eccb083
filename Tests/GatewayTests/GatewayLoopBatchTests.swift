import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// Batches served on the client connection's event loop (`CallPipeline.startBatch`): once the token is cached
/// and the loop has its backend connections, they must behave exactly like batches of the general path.
@Suite("Gateway loop batch")
struct GatewayLoopBatchTests {
    @Test func warmBatchesRunOnTheLoopWithDependenciesReferencesAndTheCaller() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        var options = bearer(try harness.token(for: "user-1"))
        try await warmUp(harness, connection, options: options)
        options.metadata[MetadataKey.idempotencyKey] = "batch-key"
        let fail = BatchTests.failingCall()
        let request = BatchTests.batch([
            BatchTests.call("first", payload: "one"),
            fail,
            BatchTests.call("afterFirst", payload: "two", dependsOn: ["first"]),
            BatchTests.call("afterFail", dependsOn: ["fails"]),
            BatchTests.call("afterSkipped", dependsOn: ["afterFail", "first"]),
            BatchTests.call("withReference", references: [BatchTests.reference(from: "first")]),
            BatchTests.call("whoami", payload: "whoami"),
        ])
        let batches = harness.runtime.pipeline.loopBatches.load(ordering: .relaxed)
        let bytes = try await connection.call(
            method: BatchPlan.batchMethod, request: request.protobufBytes(), options: options)
        #expect(harness.runtime.pipeline.loopBatches.load(ordering: .relaxed) == batches + 1)
        let results = try GatewayV1.BatchResponse(protobufBytes: bytes).results
        #expect(
            results.map(\.name) == [
                "first", "fails", "afterFirst", "afterFail", "afterSkipped", "withReference", "whoami",
            ])
        #expect(try EchoV1.EchoResponse(protobufBytes: results[0].response).payload == Array("one".utf8))
        #expect(results[1].code == .notFound && results[1].message == "no such board" && !results[1].dependencyFailed)
        #expect(try EchoV1.EchoResponse(protobufBytes: results[2].response).payload == Array("two".utf8))
        for skipped in [results[3], results[4]] {
            #expect(skipped.code == .aborted && skipped.dependencyFailed)
            #expect(skipped.message.hasPrefix(BatchSchedule.dependencyFailedMessage))
        }
        #expect(try EchoV1.EchoResponse(protobufBytes: results[5].response).payload == Array("one".utf8))
        let whoami = String(
            decoding: try EchoV1.EchoResponse(protobufBytes: results[6].response).payload, as: UTF8.self)
        #expect(whoami.hasPrefix("user-1|app-1|session-user-1|player|127.0.0.1|-"), "\(whoami)")
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    /// With two loops (the client's connection on one, backend connections opening on both), batches whose calls
    /// become ready in waves keep their order, dependencies, references and skipped calls.
    @Test func batchesOnATwoLoopGatewayKeepOrderDependenciesAndReferences() async throws {
        let harness = try await GatewayHarness.start(["RAVE_EVENT_LOOPS": "2"])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        try await warmUp(harness, connection, options: options)
        let fail = BatchTests.failingCall()
        let independent = (0..<6).map { BatchTests.call("p\($0)", payload: "v\($0)") }
        // The second wave: four calls ready together once p1 answered, copying its payload.
        let second = (0..<4).map { BatchTests.call("r\($0)", references: [BatchTests.reference(from: "p1")]) }
        let rest = [
            BatchTests.call("afterFail", dependsOn: ["fails"]),
            BatchTests.call("afterSkipped", dependsOn: ["afterFail", "p0"]),
            BatchTests.call("afterSecond", payload: "last", dependsOn: ["r3", "p5"]),
        ]
        let request = BatchTests.batch(independent + [fail] + second + rest)
        let names = request.calls.map(\.name)
        let batches = harness.runtime.pipeline.loopBatches.load(ordering: .relaxed)
        for _ in 0..<3 {
            let bytes = try await connection.call(
                method: BatchPlan.batchMethod, request: request.protobufBytes(), options: options)
            let results = try GatewayV1.BatchResponse(protobufBytes: bytes).results
            #expect(results.map(\.name) == names)
            for index in 0..<6 {
                #expect(
                    try EchoV1.EchoResponse(protobufBytes: results[index].response).payload == Array("v\(index)".utf8))
            }
            #expect(results[6].code == .notFound && !results[6].dependencyFailed)
            for index in 7..<11 {
                #expect(results[index].code == .ok)
                #expect(try EchoV1.EchoResponse(protobufBytes: results[index].response).payload == Array("v1".utf8))
            }
            for skipped in [results[11], results[12]] {
                #expect(skipped.code == .aborted && skipped.dependencyFailed)
            }
            #expect(try EchoV1.EchoResponse(protobufBytes: results[13].response).payload == Array("last".utf8))
        }
        #expect(harness.runtime.pipeline.loopBatches.load(ordering: .relaxed) == batches + 3)
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    @Test func batchesTheLoopCannotServeTakeTheGeneralPath() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        try await warmUp(harness, connection, options: options)
        let batches = harness.runtime.pipeline.loopBatches.load(ordering: .relaxed)
        let request = BatchTests.batch([
            BatchTests.call("echo"), BatchTests.call("internal", "rave.identity.v1.IdentityInternal/SigningKeys"),
        ])
        let bytes = try await connection.call(
            method: BatchPlan.batchMethod, request: request.protobufBytes(), options: options)
        let results = try GatewayV1.BatchResponse(protobufBytes: bytes).results
        #expect(results.map(\.code) == [.ok, .permissionDenied])
        #expect(harness.runtime.pipeline.loopBatches.load(ordering: .relaxed) == batches)
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    /// Single calls until one takes the loop path: the token is cached and the loop's connection is open.
    private func warmUp(_ harness: GatewayHarness, _ connection: RPCConnection, options: CallOptions) async throws {
        let before = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        for _ in 0..<200 {
            _ = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: EchoV1.EchoRequest(payload: [1]).protobufBytes(),
                options: options)
            if harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) > before { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no call took the loop path")
    }
}
