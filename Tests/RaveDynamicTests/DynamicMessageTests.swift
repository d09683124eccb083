import RaveDynamic
import RaveMessages
import RaveProtobuf
import Testing

@Suite struct DynamicMessageTests {
    @Test func scalarsRoundTripToTheSameBytesAsGeneratedCode() throws {
        let generated = Fixtures.scalars.protobufBytes()
        let dynamic = try DynamicMessage(schema: Fixtures.schema("rave.testing.v1.Scalars"), protobufBytes: generated)
        #expect(dynamic.protobufBytes() == generated)
        #expect(try dynamic.value(ofField: "sint64_value") == .int64(-9_007_199_254_740_993))
        #expect(try dynamic.value(ofField: "bytesValue") == .bytes([0, 1, 2, 250, 255]))
    }

    @Test func everyFieldKindRoundTripsThroughGeneratedTypes() throws {
        let original = Fixtures.container
        let dynamic = try DynamicMessage(
            schema: Fixtures.schema("rave.testing.v1.Container"), protobufBytes: original.protobufBytes())
        let decoded = try TestingV1.Container(protobufBytes: dynamic.protobufBytes())
        #expect(decoded == original)
        #expect(try DynamicMessage(schema: dynamic.schema, protobufBytes: dynamic.protobufBytes()) == dynamic)
    }

    @Test func oneofMemberAtItsDefaultKeepsPresence() throws {
        let dynamic = try DynamicMessage(
            schema: Fixtures.schema("rave.testing.v1.Container"), protobufBytes: Fixtures.container.protobufBytes())
        let score = try #require(dynamic.schema.field(named: "score"))
        #expect(dynamic.isSet(score))
        #expect(dynamic.value(of: score) == .int64(0))
    }

    @Test func settingAOneofMemberClearsTheOthers() throws {
        var message = DynamicMessage(schema: try Fixtures.schema("rave.testing.v1.Container"))
        try message.setValue(.string("u1"), ofField: "user_id")
        try message.setValue(.enumeration(2), ofField: "target_color")
        let decoded = try TestingV1.Container(protobufBytes: message.protobufBytes())
        #expect(decoded.target == .targetColor(.green))
    }

    @Test func builtMessagesDecodeAsGeneratedTypes() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        let itemSchema = try Fixtures.schema("rave.testing.v1.Container.Item")
        var item = DynamicMessage(schema: itemSchema)
        try item.setValue(.string("shield"), ofField: "name")
        try item.setValue(.int64(-4), ofField: "count")
        var message = DynamicMessage(schema: schema)
        try message.setValue(.list([.message(item), .message(item)]), ofField: "items")
        try message.setValue(.list([.int64(-1), .int64(Int64.max)]), ofField: "deltas")
        try message.setValue(.list([.float(1.5)]), ofField: "weights")
        try message.setValue(.int32(0), ofField: "class")
        let decoded = try TestingV1.Container(protobufBytes: message.protobufBytes())
        #expect(
            decoded.items == [TestingV1.Container.Item(name: "shield", count: -4), .init(name: "shield", count: -4)])
        #expect(decoded.deltas == [-1, Int64.max])
        #expect(decoded.weights == [1.5])
        #expect(!message.isSet(try #require(schema.field(named: "class"))))
    }

    @Test func wrongValueTypesAndForeignFieldsAreRejected() throws {
        var message = DynamicMessage(schema: try Fixtures.schema("rave.testing.v1.Container"))
        #expect(throws: DynamicError.self) { try message.setValue(.string("x"), ofField: "class") }
        #expect(throws: DynamicError.self) { try message.setValue(.int32(1), ofField: "numbers") }
        #expect(throws: DynamicError.self) { try message.setValue(.int32(1), ofField: "no_such_field") }
        let item = DynamicMessage(schema: try Fixtures.schema("rave.testing.v1.Scalars"))
        #expect(throws: DynamicError.self) { try message.setValue(.message(item), ofField: "item") }
    }

    @Test func invalidBytesAreAnError() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Scalars")
        #expect(throws: DynamicError.self) { try DynamicMessage(schema: schema, protobufBytes: [0x0A, 0x05, 0x01]) }
        #expect(try DynamicMessage(schema: schema, protobufBytes: []) == DynamicMessage(schema: schema))
    }
}
