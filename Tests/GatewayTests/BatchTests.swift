import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// Batch validation (pure) and execution (end to end over TLS).
@Suite("Gateway batch")
struct BatchTests {
    /// A call named "fails" that the Echo service answers NOT_FOUND, so calls depending on it are skipped.
    static func failingCall() -> GatewayV1.BatchCall {
        var fail = GatewayV1.BatchCall()
        fail.name = "fails"
        fail.method = "rave.echo.v1.Echo/Fail"
        fail.request = EchoV1.FailRequest(code: .notFound, message: "no such board").protobufBytes()
        return fail
    }

    static func call(
        _ name: String, _ method: String = "rave.echo.v1.Echo/Echo", payload: String = "x", dependsOn: [String] = [],
        references: [GatewayV1.FieldReference] = []
    ) -> GatewayV1.BatchCall {
        var call = GatewayV1.BatchCall()
        call.name = name
        call.method = method
        call.request = EchoV1.EchoRequest(payload: Array(payload.utf8)).protobufBytes()
        call.dependsOn = dependsOn
        call.references = references
        return call
    }

    static func batch(_ calls: [GatewayV1.BatchCall]) -> GatewayV1.BatchRequest {
        var request = GatewayV1.BatchRequest()
        request.calls = calls
        return request
    }

    static func reference(from call: String) -> GatewayV1.FieldReference {
        var reference = GatewayV1.FieldReference()
        reference.fromCall = call
        reference.fromPath = "payload"
        reference.toPath = "payload"
        return reference
    }

    // MARK: - Validation

    @Test(arguments: [
        ([call("a"), call("a")], "both named"),
        ([call("a", dependsOn: ["zz"])], "not in the batch"),
        ([call("a", dependsOn: ["b"]), call("b")], "comes later"),
        ([call("a", dependsOn: ["b"]), call("b", dependsOn: ["a"])], "cycle: a → b → a"),
        ([call("a", dependsOn: ["a"])], "itself"),
        ([call("")], "needs a name"),
        ([call("a", "")], "no method"),
        ([call("a", "rave.gateway.v1.Gateway/Batch")], "cannot nest"),
        ([call("a"), call("b", references: [reference(from: "c")]), call("c")], "comes later"),
        ([call("a"), call("b", references: [reference(from: "nope")])], "not in the batch"),
        ([GatewayV1.BatchCall](), "1…50"),
    ])
    func invalidBatchesAreRejectedWhole(calls: [GatewayV1.BatchCall], fragment: String) {
        let error = #expect(throws: RPCError.self) { try BatchPlan(Self.batch(calls)) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
    }

    @Test func fiftyCallsAreAllowedAndFiftyOneAreNot() throws {
        let fifty = (0..<50).map { Self.call("c\($0)") }
        #expect(try BatchPlan(Self.batch(fifty)).steps.count == 50)
        let error = #expect(throws: RPCError.self) { try BatchPlan(Self.batch(fifty + [Self.call("c50")])) }
        #expect(error?.message.contains("got 51") == true)
    }

    @Test func referencesAreCheckedAgainstTheMessageTypes() {
        var badPath = Self.reference(from: "a")
        badPath.toPath = "payload..x"
        var unknownField = Self.reference(from: "a")
        unknownField.fromPath = "nonexistent"
        var wrongType = Self.reference(from: "a")
        wrongType.toPath = "delay_ms"
        let delayed = Self.call("b", "rave.echo.v1.Echo/EchoAfterDelay", references: [wrongType])
        let cases: [([GatewayV1.BatchCall], String)] = [
            ([Self.call("a"), Self.call("b", references: [badPath])], "payload..x"),
            ([Self.call("a"), Self.call("b", references: [unknownField])], "no field nonexistent"),
            ([Self.call("a"), delayed], "cannot copy"),
            (
                [Self.call("a", "rave.nosuch.v1.Thing/Do"), Self.call("b", references: [Self.reference(from: "a")])],
                "unknown method"
            ),
        ]
        for (calls, fragment) in cases {
            let error = #expect(throws: RPCError.self) { try BatchPlan(Self.batch(calls)) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
        }
    }

    // MARK: - Execution

    @Test func resultsComeInRequestOrderAndFailedDependenciesAreSkipped() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let fail = Self.failingCall()
        let request = Self.batch([
            Self.call("first", payload: "one"),
            fail,
            Self.call("afterFirst", payload: "two", dependsOn: ["first"]),
            Self.call("afterFail", dependsOn: ["fails"]),
            Self.call("afterSkipped", dependsOn: ["afterFail", "first"]),
            Self.call("withReference", references: [Self.reference(from: "first")]),
            Self.call("internal", "rave.identity.v1.IdentityInternal/SigningKeys"),
        ])
        let bytes = try await connection.call(
            method: "rave.gateway.v1.Gateway/Batch", request: request.protobufBytes(),
            options: bearer(try harness.token(for: "user-1")))
        let results = try GatewayV1.BatchResponse(protobufBytes: bytes).results
        #expect(
            results.map(\.name) == [
                "first", "fails", "afterFirst", "afterFail", "afterSkipped", "withReference", "internal",
            ])
        #expect(results[0].code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: results[0].response).payload == Array("one".utf8))
        #expect(results[1].code == .notFound && results[1].message == "no such board" && !results[1].dependencyFailed)
        #expect(try EchoV1.EchoResponse(protobufBytes: results[2].response).payload == Array("two".utf8))
        for skipped in [results[3], results[4]] {
            #expect(skipped.code == .aborted && skipped.dependencyFailed)
            #expect(skipped.message.hasPrefix(BatchSchedule.dependencyFailedMessage))
        }
        // The reference copied "one" from the first call's response into this call's request.
        #expect(try EchoV1.EchoResponse(protobufBytes: results[5].response).payload == Array("one".utf8))
        #expect(results[6].code == .permissionDenied)
        connection.close()
        try await harness.stop()
    }

    @Test func independentCallsRunConcurrentlyUnderOneDeadline() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let calls = (0..<20).map { index in
            var call = GatewayV1.BatchCall()
            call.name = "slow\(index)"
            call.method = "rave.echo.v1.Echo/EchoAfterDelay"
            call.request = EchoV1.EchoAfterDelayRequest(payload: [UInt8(index)], delayMs: 200).protobufBytes()
            return call
        }
        // A deadline for a stuck test only (the default one passed on a loaded machine): concurrency is counted below.
        let bytes = try await connection.call(
            method: "rave.gateway.v1.Gateway/Batch", request: Self.batch(calls).protobufBytes(),
            options: bearer(try harness.token(for: "user-1"), timeout: .seconds(30)))
        #expect(try GatewayV1.BatchResponse(protobufBytes: bytes).results.allSatisfy { $0.code == .ok })
        // Counted at the backend, not timed: the independent calls were in flight together.
        let most = harness.echo.delayedCalls.withLock { $0.most }
        #expect(most > 1, "the 20 independent calls ran one at a time")

        // One deadline for the batch: calls still running when it passes fail with it.
        let late = try await connection.call(
            method: "rave.gateway.v1.Gateway/Batch",
            request: Self.batch([calls[0], Self.call("quick")]).protobufBytes(),
            options: bearer(try harness.token(for: "user-1"), timeout: .seconds(5)))
        #expect(try GatewayV1.BatchResponse(protobufBytes: late).results.allSatisfy { $0.code == .ok })
        let expired = try await connection.call(
            method: "rave.gateway.v1.Gateway/Batch",
            request: Self.batch([calls[0], Self.call("quick")]).protobufBytes(),
            options: bearer(try harness.token(for: "user-1"), timeout: .milliseconds(100)))
        let codes = try GatewayV1.BatchResponse(protobufBytes: expired).results.map(\.code)
        #expect(codes == [.deadlineExceeded, .ok])
        connection.close()
        try await harness.stop()
    }

    @Test func batchCallsNeedTokensUnlessTheyAreLogins() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let bytes = try await connection.call(
            method: "rave.gateway.v1.Gateway/Batch", request: Self.batch([Self.call("a")]).protobufBytes(),
            options: CallOptions())
        #expect(try GatewayV1.BatchResponse(protobufBytes: bytes).results.first?.code == .unauthenticated)
        let invalid = await failure(
            connection, "rave.gateway.v1.Gateway/Batch",
            Self.batch((0..<51).map { Self.call("c\($0)") }).protobufBytes())
        #expect(invalid?.code == .invalidArgument)
        connection.close()
        try await harness.stop()
    }
}
