/// The type of a field's values, as declared in the .proto file.
public enum FieldType: String, Sendable, Hashable {
    case double, float, int32, int64, uint32, uint64, sint32, sint64, fixed32, fixed64, sfixed32, sfixed64
    case bool, string, bytes
    case enumeration = "enum"
    case message
}

/// One field of a message type.
public struct FieldSchema: Sendable {
    /// The name in the .proto file (`user_id`).
    public let name: String
    /// The name in protobuf's JSON mapping (`userId`).
    public let jsonName: String
    /// The field number.
    public let number: Int32
    /// The declared type; for maps, `message` (the entries).
    public let type: FieldType
    /// Whether the field is `repeated` (maps are repeated entries).
    public let isRepeated: Bool
    /// Whether repeated scalars are encoded packed.
    public let isPacked: Bool
    /// Whether an unset field differs from one set to its default: messages, oneof members, proto2 optionals.
    public let hasPresence: Bool
    /// Members of one oneof share this value; `nil` outside oneofs.
    public let oneofGroup: Int?
    /// The message type of `message` fields.
    public let messageType: MessageSchema?
    /// The enum type of `enum` fields.
    public let enumType: EnumSchema?
    /// Where protobuf-c keeps the field in its C struct.
    let storage: FieldStorage

    /// Whether the field is a `map<K, V>`: repeated entries with a `key` and a `value`.
    public var isMap: Bool { isRepeated && messageType?.isMapEntry == true }

    /// The type as written in a .proto file, for error messages (`repeated int64`, `rave.identity.v1.User`).
    public var typeDescription: String {
        let element: String
        switch type {
        case .message: element = messageType?.fullName ?? "message"
        case .enumeration: element = enumType?.fullName ?? "enum"
        default: element = type.rawValue
        }
        if isMap, let entry = messageType, entry.fields.count == 2 {
            return "map<\(entry.fields[0].typeDescription), \(entry.fields[1].typeDescription)>"
        }
        return isRepeated ? "repeated \(element)" : element
    }

    /// Whether values of `other` may be stored in this field: the same scalar type (the wire encoding may
    /// differ: `sint64` and `int64` hold the same values), the same enum, or the same message type.
    public func accepts(valuesOf other: FieldSchema) -> Bool {
        guard isRepeated == other.isRepeated, isMap == other.isMap else { return false }
        switch (type, other.type) {
        case (.message, .message): return messageType === other.messageType
        case (.enumeration, .enumeration): return enumType === other.enumType
        default: return type.valueKind == other.type.valueKind
        }
    }
}

/// Offsets into protobuf-c's C struct, read when decoding.
struct FieldStorage: Sendable {
    /// protobuf-c's `ProtobufCLabel` (required, optional, repeated, none).
    var label: UInt32
    /// Whether the quantifier is a oneof's case member, holding the number of the set field.
    var isOneof: Bool
    var offset: Int
    /// The `has_`, `n_` or oneof-case member.
    var quantifierOffset: Int
}

extension FieldType {
    /// Types that hold the same Swift values share a kind (`sint32`, `sfixed32` and `int32` hold `Int32`).
    var valueKind: String {
        switch self {
        case .int32, .sint32, .sfixed32: return "int32"
        case .int64, .sint64, .sfixed64: return "int64"
        case .uint32, .fixed32: return "uint32"
        case .uint64, .fixed64: return "uint64"
        default: return rawValue
        }
    }
}

/// A message type: its fields, looked up by name, JSON name or number.
///
/// A class because message types refer to each other, possibly in cycles.
// @unchecked Sendable: `fields` and `isMapEntry` are set while the registry is built, before it is shared.
public final class MessageSchema: @unchecked Sendable, CustomStringConvertible {
    /// The fully qualified name (`rave.identity.v1.User`).
    public let fullName: String
    /// The fields, ordered by number.
    public internal(set) var fields: [FieldSchema] = []
    /// Whether this is the entry type protoc generates for a map field.
    public internal(set) var isMapEntry = false
    /// The address of protobuf-c's `ProtobufCMessageDescriptor`; only ProtobufCBridge.swift interprets it.
    let protobufCDescriptor: UnsafeRawPointer
    private var indexByName: [String: Int] = [:]
    private var indexByNumber: [Int32: Int] = [:]

    init(fullName: String, protobufCDescriptor: UnsafeRawPointer) {
        self.fullName = fullName
        self.protobufCDescriptor = protobufCDescriptor
    }

    func setFields(_ fields: [FieldSchema]) {
        self.fields = fields.sorted { $0.number < $1.number }
        for (index, field) in self.fields.enumerated() {
            indexByName[field.name] = index
            indexByName[field.jsonName] = index
            indexByNumber[field.number] = index
        }
    }

    /// The field named `name` in the .proto file or in JSON.
    public func field(named name: String) -> FieldSchema? { indexByName[name].map { fields[$0] } }

    /// The field numbered `number`.
    public func field(number: Int32) -> FieldSchema? { indexByNumber[number].map { fields[$0] } }

    public var description: String { fullName }
}

/// An enum type: value names and numbers.
public final class EnumSchema: Sendable, CustomStringConvertible {
    /// The fully qualified name (`rave.testing.v1.Color`).
    public let fullName: String
    /// Every value, in declaration order.
    public let values: [(name: String, number: Int32)]
    private let numberByName: [String: Int32]
    private let nameByNumber: [Int32: String]

    init(fullName: String, values: [(name: String, number: Int32)]) {
        self.fullName = fullName
        self.values = values
        numberByName = Dictionary(values.map { ($0.name, $0.number) }, uniquingKeysWith: { first, _ in first })
        nameByNumber = Dictionary(values.map { ($0.number, $0.name) }, uniquingKeysWith: { first, _ in first })
    }

    /// The number of the value called `name`.
    public func number(named name: String) -> Int32? { numberByName[name] }

    /// The name of the value numbered `number` (the first, when aliases share it).
    public func name(of number: Int32) -> String? { nameByNumber[number] }

    public var description: String { fullName }
}

/// One RPC method: its full name and its request and response types.
public struct MethodSchema: Sendable {
    /// `package.Service/Method`, as requests carry it (`rave.identity.v1.Identity/GuestLogin`).
    public let fullName: String
    /// The fully qualified service name.
    public let serviceName: String
    /// The request message type.
    public let request: MessageSchema
    /// The response message type.
    public let response: MessageSchema
}

/// protobuf's JSON name: underscores dropped, the letter after each one upper-cased.
func lowerCamelCase(_ name: String) -> String {
    var result = ""
    var upperNext = false
    for character in name {
        if character == "_" {
            upperNext = true
        } else if upperNext {
            result += character.uppercased()
            upperNext = false
        } else {
            result.append(character)
        }
    }
    return result
}
