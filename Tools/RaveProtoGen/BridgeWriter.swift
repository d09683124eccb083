/// Writes the conversions between one generated struct and the C struct protoc-c declares for it.
///
/// Decoding unpacks with protobuf-c and copies the C struct into Swift values; encoding builds the C
/// struct in a `ProtoArena` and packs it with protobuf-c. The C types stay inside RaveMessages.
struct BridgeWriter {
    let entry: TypeRegistry.Entry
    let message: MessageDescriptor
    let registry: TypeRegistry

    func write(into writer: inout SourceWriter) throws {
        let members = try FieldPlan.members(of: message, registry: registry)
        let cType = entry.cTypeName
        let prefix = entry.cFunctionPrefix
        writer.open("extension \(entry.swiftName) {")
        if !message.isMapEntry {
            writer.line("/// protobuf-c's descriptor of the C struct; only its init function reveals the address.")
            writer.line("// nonisolated(unsafe): a pointer to an immutable C constant, safe to share between threads.")
            writer.open(
                "nonisolated(unsafe) static let protobufCDescriptor: UnsafePointer<ProtobufCMessageDescriptor> = {")
            writer.line("var message = \(cType)()")
            writer.line("\(prefix)__init(&message)")
            writer.line("return message.base.descriptor")
            writer.close("}()")
            writer.line()
            writer.open("public init(protobufBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) {")
            writer.line("self = try ProtoDecoding.unpack(")
            writer.line(
                "    bytes, descriptor: Self.protobufCDescriptor, as: \(cType).self, messageName: Self.protoMessageName,"
            )
            writer.line("    checksStrings: \(registry.holdsStrings(message))")
            writer.line(") { message throws(ProtoDecodingError) in try Self(protobufC: message) }")
            writer.close()
            writer.line()
            writer.open("public func protobufBytes() -> [UInt8] {")
            writer.line("var arena = ProtoArena()")
            writer.line("var message = \(cType)()")
            writer.line("\(prefix)__init(&message)")
            writer.line("protobufCFill(&message, arena: &arena)")
            writer.line("return arena.pack(&message)")
            writer.close()
            writer.line()
        }
        let usesMessage = !members.isEmpty
        writer.open(
            "init(protobufC \(usesMessage ? "message" : "_"): UnsafePointer<\(cType)>) throws(ProtoDecodingError) {")
        writer.line("self.init()")
        if usesMessage { writer.line("let c = message.pointee") }
        for member in members { writeDecode(member, into: &writer) }
        writer.close()
        writer.line()
        writer.open("func protobufCMessage(arena: inout ProtoArena) -> UnsafeMutablePointer<\(cType)> {")
        writer.line("let message = arena.allocate(\(cType).self)")
        writer.line("\(prefix)__init(message)")
        writer.line("protobufCFill(&message.pointee, arena: &arena)")
        writer.line("return message")
        writer.close()
        writer.line()
        let arenaLabel = members.isEmpty ? "arena _" : "arena"
        let messageLabel = members.isEmpty ? "_ _" : "_ message"
        writer.open("func protobufCFill(\(messageLabel): inout \(cType), \(arenaLabel): inout ProtoArena) {")
        for member in members { writeEncode(member, into: &writer) }
        writer.close()
        writer.close()
    }

    // MARK: - Decoding

    private func writeDecode(_ member: FieldPlan.Member, into writer: inout SourceWriter) {
        switch member {
        case .field(let field, _):
            let source = "c.\(field.cName)"
            let target = "self.\(field.swiftName)"
            switch field.shape {
            case .singular:
                if case .message(let type) = field.value {
                    writer.line("if let value = \(source) { \(target) = try \(type.swiftName)(protobufC: value) }")
                } else {
                    writer.line("\(target) = \(decode(field.value, source, field: field.name))")
                }
            case .repeated:
                switch field.value {
                case .numeric:
                    writer.line("\(target) = ProtoDecoding.array(\(source), count: c.n_\(field.cName))")
                case .message(let type):
                    writer.line(
                        "\(target) = try ProtoDecoding.messages(\(source), count: c.n_\(field.cName)) "
                            + "{ element throws(ProtoDecodingError) in try \(type.swiftName)(protobufC: element) }")
                case .string:
                    writer.line(
                        "\(target) = try ProtoDecoding.array(\(source), count: c.n_\(field.cName)) "
                            + "{ element throws(ProtoDecodingError) in \(decode(field.value, "element", field: field.name)) }"
                    )
                default:
                    writer.line(
                        "\(target) = try ProtoDecoding.array(\(source), count: c.n_\(field.cName)) "
                            + "{ \(decode(field.value, "$0", field: field.name)) }")
                }
            case .map(let key, let value, _):
                let valueExpression: String
                if case .message(let type) = value {
                    valueExpression =
                        "try entry.pointee.value.map { value throws(ProtoDecodingError) in try \(type.swiftName)(protobufC: value) }"
                        + " ?? \(type.swiftName)()"
                } else {
                    valueExpression = decode(value, "entry.pointee.value", field: field.name)
                }
                writer.line("let \(Naming.lowerCamel(field.name))Entries = try ProtoDecoding.messages(")
                writer.line("    \(source), count: c.n_\(field.cName)")
                writer.line(") { entry throws(ProtoDecodingError) in")
                writer.line("    (\(decode(key, "entry.pointee.key", field: field.name)), \(valueExpression))")
                writer.line("}")
                writer.line(
                    "\(target) = Dictionary(\(Naming.lowerCamel(field.name))Entries, uniquingKeysWith: { _, last in last })"
                )
            case .oneofMember:
                break
            }
        case .oneof(let oneof):
            writer.open("switch c.\(oneof.cCaseName).rawValue {")
            for (field, _) in oneof.fields {
                let source = "c.\(field.cName)"
                if case .message(let type) = field.value {
                    writer.line(
                        "case \(field.number): if let value = \(source) { self.\(oneof.swiftName) = "
                            + ".\(field.swiftName)(try \(type.swiftName)(protobufC: value)) }")
                } else {
                    writer.line(
                        "case \(field.number): self.\(oneof.swiftName) = .\(field.swiftName)(\(decode(field.value, source, field: field.name)))"
                    )
                }
            }
            writer.line("default: break")
            writer.close()
        }
    }

    /// A Swift expression for the C value `source` (messages are handled by the callers).
    private func decode(_ value: FieldPlan.Value, _ source: String, field: String) -> String {
        switch value {
        case .numeric: source
        case .bool: "\(source) != 0"
        case .string: "try ProtoDecoding.string(\(source), field: \"\(field)\", of: Self.protoMessageName)"
        case .bytes: "ProtoDecoding.bytes(\(source))"
        case .enumeration(let type): "\(type.swiftName)(rawValue: Int32(truncatingIfNeeded: \(source).rawValue))"
        case .message(let type): "try \(type.swiftName)(protobufC: \(source))"
        }
    }

    // MARK: - Encoding

    private func writeEncode(_ member: FieldPlan.Member, into writer: inout SourceWriter) {
        switch member {
        case .field(let field, _):
            let target = "message.\(field.cName)"
            let source = "self.\(field.swiftName)"
            switch field.shape {
            case .singular:
                switch field.value {
                case .string, .bytes:
                    writer.line("if !\(source).isEmpty { \(target) = \(encode(field.value, source)) }")
                case .message:
                    writer.line("if let value = \(source) { \(target) = value.protobufCMessage(arena: &arena) }")
                default:
                    writer.line("\(target) = \(encode(field.value, source))")
                }
            case .repeated:
                writer.line("message.n_\(field.cName) = \(source).count")
                switch field.value {
                case .numeric: writer.line("\(target) = arena.array(\(source))")
                case .string: writer.line("\(target) = arena.strings(\(source))")
                case .bytes: writer.line("\(target) = arena.byteArrays(\(source))")
                case .bool:
                    writer.line("\(target) = arena.array(\(source), as: protobuf_c_boolean.self) { $0 ? 1 : 0 }")
                case .enumeration(let type):
                    writer.line(
                        "\(target) = arena.array(\(source), as: \(type.cTypeName).self) "
                            + "{ .init(rawValue: .init(truncatingIfNeeded: $0.rawValue)) }")
                case .message(let type):
                    writer.open("if !\(source).isEmpty {")
                    writer.line(
                        "let elements = arena.allocate(UnsafeMutablePointer<\(type.cTypeName)>?.self, count: \(source).count)"
                    )
                    writer.open("for (index, element) in \(source).enumerated() {")
                    writer.line("elements[index] = element.protobufCMessage(arena: &arena)")
                    writer.close()
                    writer.line("\(target) = elements")
                    writer.close()
                }
            case .map(let key, let value, let entry):
                let order = if case .bool = key { "{ !$0.key && $1.key }" } else { "{ $0.key < $1.key }" }
                writer.open("if !\(source).isEmpty {")
                writer.line("// Sorted, so that equal maps always encode to the same bytes.")
                writer.line(
                    "let entries = arena.allocate(UnsafeMutablePointer<\(entry.cTypeName)>?.self, count: \(source).count)"
                )
                writer.open("for (index, element) in \(source).sorted(by: \(order)).enumerated() {")
                writer.line("let entry = arena.allocate(\(entry.cTypeName).self)")
                writer.line("\(entry.cFunctionPrefix)__init(entry)")
                writer.line("entry.pointee.key = \(encode(key, "element.key"))")
                writer.line("entry.pointee.value = \(encode(value, "element.value"))")
                writer.line("entries[index] = entry")
                writer.close()
                writer.line("message.n_\(field.cName) = \(source).count")
                writer.line("\(target) = entries")
                writer.close()
            case .oneofMember:
                break
            }
        case .oneof(let oneof):
            writer.open("switch self.\(oneof.swiftName) {")
            for (field, _) in oneof.fields {
                writer.line("case .\(field.swiftName)(let value)?:")
                writer.line("    message.\(oneof.cCaseName) = .init(rawValue: \(field.number))")
                writer.line("    message.\(field.cName) = \(encode(field.value, "value"))")
            }
            writer.line("case nil: break")
            writer.close()
        }
    }

    /// A C expression for the Swift value `source`.
    private func encode(_ value: FieldPlan.Value, _ source: String) -> String {
        switch value {
        case .numeric: source
        case .bool: "\(source) ? 1 : 0"
        case .string: "arena.string(\(source))"
        case .bytes: "arena.bytes(\(source))"
        case .enumeration: ".init(rawValue: .init(truncatingIfNeeded: \(source).rawValue))"
        case .message: "\(source).protobufCMessage(arena: &arena)"
        }
    }
}
