/// What the generator needs to know about one field: its Swift and C names, types and shape.
struct FieldPlan {
    /// The type of one value of the field.
    enum Value {
        case numeric(String)
        case bool
        case string
        case bytes
        case enumeration(TypeRegistry.Entry)
        case message(TypeRegistry.Entry)
    }

    enum Shape {
        case singular
        case repeated
        case map(key: Value, value: Value, entry: TypeRegistry.Entry)
        case oneofMember
    }

    /// A stored property of the generated struct: a plain field or a whole oneof.
    enum Member {
        case field(FieldPlan, index: Int)
        case oneof(OneofPlan)

        var swiftName: String {
            switch self {
            case .field(let field, _): field.swiftName
            case .oneof(let oneof): oneof.swiftName
            }
        }
    }

    struct OneofPlan {
        var swiftName: String
        var typeName: String
        /// The `<name>_case` member of the C struct.
        var cCaseName: String
        var fields: [(FieldPlan, index: Int)]
        /// The oneof's position in its message, for its comment's source path.
        var index: Int
    }

    var name: String
    var number: Int
    var value: Value
    var shape: Shape
    var swiftName: String { Naming.escaped(Naming.lowerCamel(name)) }
    var cName: String { Naming.cFieldName(name) }

    /// The Swift type of one value.
    var valueType: String { Self.swiftType(of: value) }

    /// The type of the stored property.
    var swiftType: String {
        switch shape {
        case .singular:
            if case .message = value { return valueType + "?" }
            return valueType
        case .repeated: return "[\(valueType)]"
        case .map(let key, let value, _): return "[\(Self.swiftType(of: key)): \(Self.swiftType(of: value))]"
        case .oneofMember: return valueType
        }
    }

    var defaultValue: String {
        switch shape {
        case .repeated: return "[]"
        case .map: return "[:]"
        case .singular, .oneofMember: return Self.defaultValue(of: value)
        }
    }

    static func swiftType(of value: Value) -> String {
        switch value {
        case .numeric(let type): type
        case .bool: "Bool"
        case .string: "String"
        case .bytes: "[UInt8]"
        case .enumeration(let entry), .message(let entry): entry.swiftName
        }
    }

    static func defaultValue(of value: Value) -> String {
        switch value {
        case .numeric: "0"
        case .bool: "false"
        case .string: "\"\""
        case .bytes: "[]"
        case .enumeration(let entry):
            entry.enumeration.map { enumeration in
                "." + (Naming.caseNames(of: enumeration).first.map(Naming.escaped) ?? "init(rawValue: 0)")
            } ?? ".init(rawValue: 0)"
        case .message: "nil"
        }
    }

    // MARK: - Planning

    /// The stored properties of `message`, in field order; a oneof takes the place of its first field.
    static func members(of message: MessageDescriptor, registry: TypeRegistry) throws -> [Member] {
        var members: [Member] = []
        var oneofs: [Int: Int] = [:]  // oneof index → position in members
        for (index, field) in message.fields.enumerated() {
            if field.isProto3Optional {
                throw GeneratorError("\(field.name): proto3 optional is not supported by protoc-c 1.4")
            }
            if let oneofIndex = field.oneofIndex {
                let plan = FieldPlan(
                    name: field.name, number: field.number, value: try value(of: field, registry),
                    shape: .oneofMember)
                if let position = oneofs[oneofIndex], case .oneof(var oneof) = members[position] {
                    oneof.fields.append((plan, index))
                    members[position] = .oneof(oneof)
                } else {
                    let name = message.oneofNames[oneofIndex]
                    oneofs[oneofIndex] = members.count
                    members.append(
                        .oneof(
                            OneofPlan(
                                swiftName: Naming.escaped(Naming.lowerCamel(name)),
                                typeName: Naming.upperCamel(name), cCaseName: Naming.cCamelToLower(name) + "_case",
                                fields: [(plan, index)], index: oneofIndex)))
                }
                continue
            }
            let shape: Shape
            if field.isRepeated, field.kind == .message, let entry = registry.entries[field.typeName],
                let entryMessage = entry.message, entryMessage.isMapEntry
            {
                guard entryMessage.fields.count == 2 else {
                    throw GeneratorError("malformed map entry \(entry.fullName)")
                }
                shape = .map(
                    key: try value(of: entryMessage.fields[0], registry),
                    value: try value(of: entryMessage.fields[1], registry), entry: entry)
            } else {
                shape = field.isRepeated ? .repeated : .singular
            }
            let plan = FieldPlan(
                name: field.name, number: field.number, value: try value(of: field, registry),
                shape: shape)
            members.append(.field(plan, index: index))
        }
        return members
    }

    private static func value(of field: FieldDescriptor, _ registry: TypeRegistry) throws -> Value {
        switch field.kind {
        case .double: return .numeric("Double")
        case .float: return .numeric("Float")
        case .int32, .sint32, .sfixed32: return .numeric("Int32")
        case .int64, .sint64, .sfixed64: return .numeric("Int64")
        case .uint32, .fixed32: return .numeric("UInt32")
        case .uint64, .fixed64: return .numeric("UInt64")
        case .bool: return .bool
        case .string: return .string
        case .bytes: return .bytes
        case .enum: return .enumeration(try registry.entry(field.typeName))
        case .message: return .message(try registry.entry(field.typeName))
        case .group: throw GeneratorError("\(field.name): groups are not supported")
        }
    }
}
