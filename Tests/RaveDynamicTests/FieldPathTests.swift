import RaveDynamic
import RaveMessages
import Testing

@Suite struct FieldPathTests {
    @Test func getReadsNestedValuesFromResponseBytes() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        let bytes = Fixtures.container.protobufBytes()
        #expect(try FieldPath("item.name").resolve(in: schema).value(inProtobufBytes: bytes) == .string("sword"))
        #expect(try FieldPath("items[1].count").resolve(in: schema).value(inProtobufBytes: bytes) == .int64(-2))
        #expect(try FieldPath("scalars.uint64Value").resolve(in: schema).value(inProtobufBytes: bytes) == .uint64(.max))
        #expect(try FieldPath("numbers[2]").resolve(in: schema).value(inProtobufBytes: bytes) == .int32(300))
        let empty = TestingV1.Container().protobufBytes()
        #expect(try FieldPath("item.count").resolve(in: schema).value(inProtobufBytes: empty) == .int64(0))
    }

    @Test func setWritesIntoRequestBytesCreatingMessagesOnTheWay() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        var bytes = TestingV1.Container().protobufBytes()
        bytes = try FieldPath("item.name").resolve(in: schema).setValue(.string("bow"), inProtobufBytes: bytes)
        bytes = try FieldPath("items[0].count").resolve(in: schema).setValue(.int64(9), inProtobufBytes: bytes)
        bytes = try FieldPath("items[0].color").resolve(in: schema).setValue(.enumeration(1), inProtobufBytes: bytes)
        let decoded = try TestingV1.Container(protobufBytes: bytes)
        #expect(decoded.item?.name == "bow")
        #expect(decoded.items == [TestingV1.Container.Item(name: "", count: 9, color: .red)])
    }

    @Test func copyingBetweenCompatiblePathsWorks() throws {
        let container = try Fixtures.schema("rave.testing.v1.Container")
        let scalars = try Fixtures.schema("rave.testing.v1.Scalars")
        let source = try FieldPath("items[0].count").resolve(in: container)
        let destination = try FieldPath("sint64_value").resolve(in: scalars)
        try destination.checkAccepts(valuesAt: source)
        let value = try source.value(inProtobufBytes: Fixtures.container.protobufBytes())
        let bytes = try destination.setValue(value, inProtobufBytes: [])
        #expect(try TestingV1.Scalars(protobufBytes: bytes).sint64Value == 1)
        try FieldPath("target_item").resolve(in: container).checkAccepts(
            valuesAt: FieldPath("items[1]").resolve(in: container))
    }

    @Test func typeMismatchBetweenPathsIsAnError() throws {
        let container = try Fixtures.schema("rave.testing.v1.Container")
        let source = try FieldPath("item.name").resolve(in: container)
        let destination = try FieldPath("item.count").resolve(in: container)
        do {
            try destination.checkAccepts(valuesAt: source)
            Issue.record("string into int64 was accepted")
        } catch {
            #expect(error.kind == .typeMismatch)
            #expect(error.message.contains("item.name (string)"))
        }
        #expect(throws: DynamicError.self) {
            try FieldPath("color").resolve(in: container).checkAccepts(
                valuesAt: FieldPath("mode").resolve(in: container))
        }
        #expect(throws: DynamicError.self) {
            try FieldPath("item").resolve(in: container).checkAccepts(
                valuesAt: FieldPath("scalars").resolve(in: container))
        }
    }

    @Test func invalidPathsAreRejectedWithTheReason() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        func failure(_ path: String) -> DynamicError? {
            do {
                _ = try FieldPath(path).resolve(in: schema)
                return nil
            } catch {
                return error
            }
        }
        #expect(failure("item.nope")?.kind == .unknownField)
        #expect(failure("items.name")?.kind == .invalidPath)
        #expect(failure("items")?.message.contains("items[0]") == true)
        #expect(failure("item[0]")?.kind == .invalidPath)
        #expect(failure("item.name.first")?.kind == .invalidPath)
        #expect(failure("counters[0]")?.kind == .invalidPath)
        #expect(failure("")?.kind == .invalidPath)
        #expect(failure("items[x]")?.kind == .invalidPath)
        #expect(failure("a..b")?.kind == .invalidPath)
    }

    @Test func indexPastTheEndIsAnError() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        let path = try FieldPath("items[5].name").resolve(in: schema)
        let bytes = Fixtures.container.protobufBytes()
        #expect(throws: DynamicError.self) { try path.value(inProtobufBytes: bytes) }
        #expect(throws: DynamicError.self) { try path.setValue(.string("x"), inProtobufBytes: bytes) }
        #expect(throws: DynamicError.self) {
            try FieldPath("item.name").resolve(in: schema).setValue(.int32(1), inProtobufBytes: bytes)
        }
    }
}
