/// One value of a field: a scalar, an enum number, a nested message, or the elements of a repeated field.
public indirect enum DynamicValue: Sendable, Equatable {
    case double(Double)
    case float(Float)
    /// `int32`, `sint32` and `sfixed32` fields.
    case int32(Int32)
    /// `int64`, `sint64` and `sfixed64` fields.
    case int64(Int64)
    /// `uint32` and `fixed32` fields.
    case uint32(UInt32)
    /// `uint64` and `fixed64` fields.
    case uint64(UInt64)
    case bool(Bool)
    case string(String)
    case bytes([UInt8])
    /// An enum value by number; the field's `EnumSchema` has the names.
    case enumeration(Int32)
    case message(DynamicMessage)
    /// The elements of a repeated field; a map's are its entry messages (`key`, `value`).
    case list([DynamicValue])

    /// Whether proto3 would leave this value off the wire in a field without presence.
    var isDefault: Bool {
        switch self {
        case .double(let value): return value == 0 && value.sign == .plus
        case .float(let value): return value == 0 && value.sign == .plus
        case .int32(let value): return value == 0
        case .int64(let value): return value == 0
        case .uint32(let value): return value == 0
        case .uint64(let value): return value == 0
        case .bool(let value): return !value
        case .string(let value): return value.isEmpty
        case .bytes(let value): return value.isEmpty
        case .enumeration(let value): return value == 0
        case .message: return false
        case .list(let elements): return elements.isEmpty
        }
    }

    /// The default of one element of `field` (the field's default when it is not repeated).
    static func elementDefault(of field: FieldSchema) -> DynamicValue {
        switch field.type {
        case .double: return .double(0)
        case .float: return .float(0)
        case .int32, .sint32, .sfixed32: return .int32(0)
        case .int64, .sint64, .sfixed64: return .int64(0)
        case .uint32, .fixed32: return .uint32(0)
        case .uint64, .fixed64: return .uint64(0)
        case .bool: return .bool(false)
        case .string: return .string("")
        case .bytes: return .bytes([])
        case .enumeration: return .enumeration(0)
        case .message:
            // Every message field has a type: the registry sets it from the descriptor.
            return field.messageType.map { .message(DynamicMessage(schema: $0)) } ?? .list([])
        }
    }

    /// Whether this value can be one element of `field` (its value when not repeated).
    func fitsElement(of field: FieldSchema) -> Bool {
        switch (self, field.type) {
        case (.double, .double), (.float, .float), (.bool, .bool), (.string, .string), (.bytes, .bytes),
            (.enumeration, .enumeration):
            return true
        case (.int32, .int32), (.int32, .sint32), (.int32, .sfixed32): return true
        case (.int64, .int64), (.int64, .sint64), (.int64, .sfixed64): return true
        case (.uint32, .uint32), (.uint32, .fixed32): return true
        case (.uint64, .uint64), (.uint64, .fixed64): return true
        case (.message(let message), .message): return message.schema === field.messageType
        default: return false
        }
    }

    /// The case name, for type-mismatch messages.
    var kindDescription: String {
        switch self {
        case .double: return "double"
        case .float: return "float"
        case .int32: return "int32"
        case .int64: return "int64"
        case .uint32: return "uint32"
        case .uint64: return "uint64"
        case .bool: return "bool"
        case .string: return "string"
        case .bytes: return "bytes"
        case .enumeration: return "enum"
        case .message(let message): return message.schema.fullName
        case .list: return "list"
        }
    }
}

/// A message of any type in the registry, as a tree of values; decoded by protobuf-c, encoded by
/// `protobufBytes()`.
///
/// Only set fields are stored, so two messages with the same content are equal: a field without presence
/// set to its default is the same as an unset one; oneof members, messages and proto2 optionals keep
/// their presence. Unknown fields are dropped.
public struct DynamicMessage: Sendable, Equatable {
    /// The message type.
    public let schema: MessageSchema
    /// The set fields' values, by field number.
    var values: [Int32: DynamicValue] = [:]

    /// An empty message (every field at its default).
    public init(schema: MessageSchema) {
        self.schema = schema
    }

    /// Decodes the protobuf wire format.
    public init(schema: MessageSchema, protobufBytes bytes: [UInt8]) throws(DynamicError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(DynamicError) -> DynamicMessage in try DynamicMessage.unpack(buffer, schema: schema) }
        }
        self = try result.get()
    }

    /// The set fields with their values, in field-number order.
    public var setFields: [(field: FieldSchema, value: DynamicValue)] {
        schema.fields.compactMap { field in values[field.number].map { (field, $0) } }
    }

    /// Whether `field` is set (for fields without presence: holds a value other than its default).
    public func isSet(_ field: FieldSchema) -> Bool { values[field.number] != nil }

    /// The value of `field`: its default when unset (an empty list for repeated fields).
    public func value(of field: FieldSchema) -> DynamicValue {
        if let value = values[field.number] { return value }
        return field.isRepeated ? .list([]) : DynamicValue.elementDefault(of: field)
    }

    /// The value of the field named `name` (.proto or JSON name).
    public func value(ofField name: String) throws(DynamicError) -> DynamicValue {
        value(of: try schema.requireField(name))
    }

    /// Sets `field`, checking the value's type; setting a oneof member clears the oneof's other members.
    public mutating func setValue(_ value: DynamicValue, of field: FieldSchema) throws(DynamicError) {
        guard schema.field(number: field.number)?.name == field.name else {
            throw DynamicError(.unknownField, "\(schema.fullName) has no field \(field.name)")
        }
        let fits: Bool
        if field.isRepeated {
            if case .list(let elements) = value {
                fits = elements.allSatisfy { $0.fitsElement(of: field) }
            } else {
                fits = false
            }
        } else {
            fits = value.fitsElement(of: field)
        }
        guard fits else {
            throw DynamicError(
                .typeMismatch,
                "field \(field.name) of \(schema.fullName) is \(field.typeDescription), got \(value.kindDescription)")
        }
        if let group = field.oneofGroup {
            for member in schema.fields where member.oneofGroup == group { values[member.number] = nil }
        }
        values[field.number] = !field.hasPresence && value.isDefault ? nil : value
    }

    /// Sets the field named `name` (.proto or JSON name).
    public mutating func setValue(_ value: DynamicValue, ofField name: String) throws(DynamicError) {
        try setValue(value, of: try schema.requireField(name))
    }

    /// Resets `field` to unset.
    public mutating func clear(_ field: FieldSchema) {
        values[field.number] = nil
    }

    public static func == (left: DynamicMessage, right: DynamicMessage) -> Bool {
        left.schema === right.schema && left.values == right.values
    }
}

extension MessageSchema {
    /// The field named `name`, or an error naming the message and the field.
    func requireField(_ name: String) throws(DynamicError) -> FieldSchema {
        guard let field = field(named: name) else {
            throw DynamicError(.unknownField, "\(fullName) has no field \"\(name)\"")
        }
        return field
    }
}
