import RaveMessages
import RaveProtobuf
import Testing

/// protobuf-c keeps strings as C strings; a NUL inside one must neither cut it short nor slip through.
@Suite struct NULStringTests {
    @Test func encodingKeepsTextAfterANUL() {
        let handshake = RpcV1.Handshake(agent: "ab\u{0}cd")
        #expect(handshake.protobufBytes() == [0x22, 0x05, 0x61, 0x62, 0x00, 0x63, 0x64])
    }

    @Test func encodingKeepsNULsInNestedRepeatedMapAndOneofStrings() throws {
        // The same message with DEL (0x7F, a byte no tag, length or value below uses) where the NULs are must
        // encode to the same bytes but for those characters.
        func container(_ mark: String) -> TestingV1.Container {
            TestingV1.Container(
                scalars: .init(stringValue: "\(mark)lead"), item: .init(name: "mid\(mark)dle"),
                items: [.init(name: "x"), .init(name: "trail\(mark)")], names: ["a\(mark)\(mark)b", "clean"],
                target: .userId(mark), counters: ["k\(mark)ey": 2], labels: [3: "val\(mark)ue"],
                default: "ÿ\(mark)ü")
        }
        let withNUL = container("\u{0}").protobufBytes()
        let withDEL = container("\u{7F}").protobufBytes()
        #expect(withNUL == withDEL.map { $0 == 0x7F ? 0 : $0 })
        #expect(withDEL.filter { $0 == 0x7F }.count == 9)
        #expect(!withNUL.contains(ProtoStringFields.nulStandIn))
        let clean = TestingV1.Container(item: .init(name: "ÿ"), names: ["naïve"], default: "\u{FF}")
        #expect(try TestingV1.Container(protobufBytes: clean.protobufBytes()) == clean)
    }

    @Test func decodingRefusesANULInATopLevelString() {
        #expect(
            throws: ProtoDecodingError(
                messageName: "rave.rpc.v1.Handshake",
                reason: "field agent holds a NUL character (U+0000), which text may not hold")
        ) {
            try RpcV1.Handshake(protobufBytes: [0x22, 0x03, 0x61, 0x00, 0x62])
        }
    }

    @Test(
        arguments: [
            ("item.name", TestingV1.Container(item: .init(name: "Bob\u{0}Evil"))),
            ("items.name", TestingV1.Container(items: [.init(name: "ok"), .init(name: "\u{0}abc")])),
            ("names", TestingV1.Container(names: ["fine", "seed\u{0}tail"])),
            ("user_id", TestingV1.Container(target: .userId("1.00\u{0}junk"))),
            ("target_item.name", TestingV1.Container(target: .targetItem(.init(name: "\u{0}")))),
            ("counters.key", TestingV1.Container(counters: ["a\u{0}": 1])),
            ("labels.value", TestingV1.Container(labels: [1: "b\u{0}"])),
            ("items_by_id.value.name", TestingV1.Container(itemsById: [1: .init(name: "c\u{0}")])),
            ("scalars.string_value", TestingV1.Container(scalars: .init(stringValue: "\u{0}"))),
        ])
    func decodingRefusesANULAtAnyDepth(path: String, message: TestingV1.Container) {
        #expect(
            throws: ProtoDecodingError(
                messageName: "rave.testing.v1.Container",
                reason: "field \(path) holds a NUL character (U+0000), which text may not hold")
        ) {
            try TestingV1.Container(protobufBytes: message.protobufBytes())
        }
    }

    @Test func bytesFieldsMayHoldNULs() throws {
        let container = TestingV1.Container(blobs: [[0, 0]], target: .raw([0, 1, 0]))
        #expect(try TestingV1.Container(protobufBytes: container.protobufBytes()) == container)
    }

    @Test func invalidUTF8AfterAValidPrefixIsRefused() {
        // "ab" then a lone continuation byte: the decoder must read the whole string, not a prefix.
        #expect(throws: ProtoDecodingError.self) {
            try RpcV1.Handshake(protobufBytes: [0x22, 0x03, 0x61, 0x62, 0x80])
        }
    }
}
