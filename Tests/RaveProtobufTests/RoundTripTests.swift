import RaveMessages
import Testing

@Suite struct RoundTripTests {
    @Test func richContainerSurvivesEncodeAndDecode() throws {
        let bytes = SampleMessages.container.protobufBytes()
        let decoded = try TestingV1.Container(protobufBytes: bytes)
        #expect(decoded == SampleMessages.container)
        #expect(decoded.protobufBytes() == bytes)
    }

    @Test func everyScalarTypeKeepsItsExtremes() throws {
        let extremes = TestingV1.Scalars(
            doubleValue: .greatestFiniteMagnitude, floatValue: -.leastNonzeroMagnitude, int32Value: .min,
            int64Value: .min, uint32Value: .max, uint64Value: .max, sint32Value: .min, sint64Value: .max,
            fixed32Value: .max, fixed64Value: .max, sfixed32Value: .min, sfixed64Value: .min, boolValue: true,
            stringValue: "ünïcødé ✓", bytesValue: [0, 0, 0])
        #expect(try TestingV1.Scalars(protobufBytes: extremes.protobufBytes()) == extremes)
    }

    @Test(arguments: [
        TestingV1.Container.Target.userId("u-1"), .userId(""), .score(0), .score(-77),
        .targetItem(.init()), .targetItem(.init(name: "n", count: 1, color: .green)), .raw([]), .raw([0, 9]),
        .targetColor(.unspecified), .targetColor(.unrecognized(42)),
    ])
    func everyOneofCaseRoundTripsEvenAtItsDefault(target: TestingV1.Container.Target) throws {
        let message = TestingV1.Container(target: target)
        let decoded = try TestingV1.Container(protobufBytes: message.protobufBytes())
        #expect(decoded.target == target)
    }

    @Test func unsetOneofStaysNil() throws {
        let decoded = try TestingV1.Container(protobufBytes: TestingV1.Container(mode: .on).protobufBytes())
        #expect(decoded.target == nil)
        #expect(decoded.mode == .on)
    }

    @Test func unknownEnumNumbersSurviveARoundTrip() throws {
        // Field 9 (colors, packed) = [1, 77] and field 10 (color) = 99: numbers this build does not define.
        let wire: [UInt8] = [0x4A, 0x02, 0x01, 0x4D, 0x50, 0x63]
        let decoded = try TestingV1.Container(protobufBytes: wire)
        #expect(decoded.color == .unrecognized(99))
        #expect(decoded.colors == [.red, .unrecognized(77)])
        #expect(decoded.protobufBytes() == wire)
    }

    @Test func enumCasesFollowTheProtoNames() {
        #expect(RpcV1.StatusCode.ok.rawValue == 0)
        #expect(RpcV1.StatusCode.invalidArgument.rawValue == 3)
        #expect(RpcV1.StatusCode.internal.rawValue == 13)
        #expect(RpcV1.StatusCode(rawValue: 16) == .unauthenticated)
        #expect(RpcV1.StatusCode(rawValue: 1000) == .unrecognized(1000))
        #expect(RpcV1.HealthCheckResponse.ServingStatus(rawValue: 0) == .unspecified)
        #expect(RpcV1.HealthCheckResponse.ServingStatus.serviceUnknown.rawValue == 3)
        #expect(TestingV1.Color.deepBlue.rawValue == 3)
        #expect(TestingV1.Container.Mode.auto.rawValue == 2)
    }

    @Test func mapsWithManyEntriesRoundTripAndEncodeDeterministically() throws {
        var message = RpcV1.Request(method: "rave.echo.v1.Echo/Echo")
        for index in 0..<50 { message.metadata["key-\(index)"] = "value-\(index)" }
        let bytes = message.protobufBytes()
        #expect(try RpcV1.Request(protobufBytes: bytes) == message)
        var shuffled = RpcV1.Request(method: "rave.echo.v1.Echo/Echo")
        for index in (0..<50).reversed() { shuffled.metadata["key-\(index)"] = "value-\(index)" }
        #expect(shuffled.protobufBytes() == bytes)
    }

    @Test func largePayloadsRoundTrip() throws {
        let payload = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let request = RpcV1.Request(method: "m", timeoutMs: 5, metadata: ["a": "b"], payload: payload)
        #expect(try RpcV1.Request(protobufBytes: request.protobufBytes()) == request)
    }

    @Test func emptyInputDecodesToTheDefaultMessage() throws {
        #expect(try RpcV1.Response(protobufBytes: []) == RpcV1.Response())
        #expect(try TestingV1.Container(protobufBytes: []) == TestingV1.Container())
    }
}
