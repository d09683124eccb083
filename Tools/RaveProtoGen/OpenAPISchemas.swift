/// JSON Schemas of messages and enums in protobuf's canonical JSON mapping, as the gateway's transcoder
/// (`Shared/Wire/RaveDynamic`) reads and writes them: lowerCamelCase names, 64-bit integers as strings (numbers
/// accepted), enums by name, bytes as base64, unset fields left out (so nothing is `required`), and no field the
/// message does not have.
struct OpenAPISchemas {
    /// A message or enum with its doc comments.
    struct DocumentedType {
        var comment: String?
        var message: MessageDescriptor?
        var enumeration: EnumDescriptor?
        /// Comments of the fields (message) or values (enum), by index.
        var memberComments: [Int: String] = [:]
        /// Comments of the oneofs, by index.
        var oneofComments: [Int: String] = [:]
    }

    /// The place of a schema in the document.
    static func reference(_ fullName: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(fullName)")] }

    private(set) var types: [String: DocumentedType] = [:]
    /// Fields whose JSON differs from the canonical mapping on the front door, by "message.field": the schema to
    /// use instead.
    let overrides: [String: JSONValue]

    init(files: [FileDescriptor], overrides: [String: JSONValue]) {
        self.overrides = overrides
        for file in files {
            for (index, message) in file.messages.enumerated() {
                add(message, fullName: file.package + "." + message.name, path: [4, index], file: file)
            }
            for (index, enumeration) in file.enums.enumerated() {
                add(enumeration, fullName: file.package + "." + enumeration.name, path: [5, index], file: file)
            }
        }
    }

    private mutating func add(_ message: MessageDescriptor, fullName: String, path: [Int], file: FileDescriptor) {
        var type = DocumentedType(comment: file.comments[path], message: message)
        for index in message.fields.indices { type.memberComments[index] = file.comments[path + [2, index]] }
        for index in message.oneofNames.indices { type.oneofComments[index] = file.comments[path + [8, index]] }
        types[fullName] = type
        for (index, nested) in message.nestedMessages.enumerated() {
            add(nested, fullName: fullName + "." + nested.name, path: path + [3, index], file: file)
        }
        for (index, nested) in message.enums.enumerated() {
            add(nested, fullName: fullName + "." + nested.name, path: path + [4, index], file: file)
        }
    }

    private mutating func add(_ enumeration: EnumDescriptor, fullName: String, path: [Int], file: FileDescriptor) {
        var type = DocumentedType(comment: file.comments[path], enumeration: enumeration)
        for index in enumeration.values.indices { type.memberComments[index] = file.comments[path + [2, index]] }
        types[fullName] = type
    }

    /// The full names of `roots` and of every message and enum they hold, sorted; map entries are not types of
    /// their own in JSON.
    func reachable(from roots: [String]) throws -> [String] {
        var found: Set<String> = []
        var pending = roots
        while let fullName = pending.popLast() {
            guard found.insert(fullName).inserted else { continue }
            guard let message = try type(fullName).message else { continue }
            for field in message.fields where field.kind == .message || field.kind == .enum {
                let target = String(field.typeName.dropFirst())
                if let entry = try type(target).message, entry.isMapEntry {
                    pending += entry.fields.filter { $0.kind == .message || $0.kind == .enum }
                        .map { String($0.typeName.dropFirst()) }
                } else {
                    pending.append(target)
                }
            }
        }
        return found.sorted()
    }

    func type(_ fullName: String) throws -> DocumentedType {
        guard let type = types[fullName] else { throw GeneratorError("unknown type \(fullName)") }
        return type
    }

    /// The schema of the message or enum called `fullName`.
    func schema(of fullName: String) throws -> JSONValue {
        let type = try type(fullName)
        if let enumeration = type.enumeration { return schema(of: enumeration, type: type) }
        guard let message = type.message else { throw GeneratorError("unknown type \(fullName)") }
        var properties: [(key: String, value: JSONValue)] = []
        for (index, field) in message.fields.enumerated() {
            let schema = try overrides["\(fullName).\(field.name)"] ?? fieldSchema(field)
            properties.append((jsonName(of: field), schema.describing(type.memberComments[index])))
        }
        var oneofNotes: [String] = []
        var exclusions: [JSONValue] = []
        for (index, name) in message.oneofNames.enumerated() {
            let members = message.fields.filter { $0.oneofIndex == index }.map(jsonName(of:))
            guard members.count > 1 else { continue }
            let listed = members.map { "`\($0)`" }.joined(separator: ", ")
            oneofNotes.append(
                "At most one of \(listed) (oneof `\(name)`)"
                    + (type.oneofComments[index].map { ": \(commentText($0))" } ?? "."))
            for (position, first) in members.enumerated() {
                for second in members[(position + 1)...] {
                    exclusions.append(["required": [.string(first), .string(second)]])
                }
            }
        }
        let description = ([type.comment.map(commentText)].compactMap { $0 } + oneofNotes).joined(separator: "\n\n")
        return .members([
            ("type", "object"),
            ("description", description.isEmpty ? nil : .string(description)),
            ("properties", properties.isEmpty ? nil : .object(properties)),
            ("additionalProperties", false),
            ("not", exclusions.isEmpty ? nil : ["anyOf": .array(exclusions)]),
        ])
    }

    private func schema(of enumeration: EnumDescriptor, type: DocumentedType) -> JSONValue {
        var lines = type.comment.map { [commentText($0)] } ?? []
        let documented = enumeration.values.enumerated().compactMap { index, value in
            type.memberComments[index].map { "- `\(value.name)`: \(commentText($0))" }
        }
        if !documented.isEmpty { lines.append(documented.joined(separator: "\n")) }
        var names: [String] = []
        for value in enumeration.values where !names.contains(value.name) { names.append(value.name) }
        return .members([
            ("type", "string"),
            ("description", lines.isEmpty ? nil : .string(lines.joined(separator: "\n\n"))),
            ("enum", .array(names.map { .string($0) })),
        ])
    }

    /// The name protoc gives the field in JSON.
    func jsonName(of field: FieldDescriptor) -> String {
        field.jsonName.isEmpty ? Naming.lowerCamel(field.name) : field.jsonName
    }

    private func fieldSchema(_ field: FieldDescriptor) throws -> JSONValue {
        if field.kind == .message, let entry = try type(String(field.typeName.dropFirst())).message, entry.isMapEntry {
            guard entry.fields.count == 2 else {
                throw GeneratorError("map entry \(field.typeName) needs a key and a value")
            }
            return .members([
                ("type", "object"),
                ("propertyNames", Self.mapKeySchema(entry.fields[0].kind)),
                ("additionalProperties", try elementSchema(entry.fields[1])),
            ])
        }
        let element = try elementSchema(field)
        return field.isRepeated ? ["type": "array", "items": element] : element
    }

    private func elementSchema(_ field: FieldDescriptor) throws -> JSONValue {
        switch field.kind {
        case .message, .enum: return Self.reference(String(field.typeName.dropFirst()))
        case .group: throw GeneratorError("field \(field.name): groups are not supported")
        default: return Self.scalarSchema(field.kind)
        }
    }

    /// The schema of one scalar value, as the transcoder writes it; what it reads besides (numbers as strings, the
    /// .proto field names, null for a default) is left out.
    static func scalarSchema(_ kind: FieldDescriptor.Kind) -> JSONValue {
        switch kind {
        case .double, .float:
            return [
                "anyOf": [
                    ["type": "number", "format": .string(kind == .double ? "double" : "float")],
                    ["type": "string", "enum": ["NaN", "Infinity", "-Infinity"]],
                ]
            ]
        case .int32, .sint32, .sfixed32:
            return [
                "type": "integer", "format": "int32", "minimum": .integer(Int(Int32.min)),
                "maximum": .integer(Int(Int32.max)),
            ]
        case .uint32, .fixed32:
            return ["type": "integer", "minimum": 0, "maximum": .integer(Int(UInt32.max))]
        case .int64, .sint64, .sfixed64:
            return [
                "type": ["string", "integer"], "format": "int64", "pattern": "^-?[0-9]{1,19}$",
                "description": "A 64-bit integer: written as a decimal string, read from a string or a number.",
            ]
        case .uint64, .fixed64:
            return [
                "type": ["string", "integer"], "format": "int64", "pattern": "^[0-9]{1,20}$", "minimum": 0,
                "description":
                    "An unsigned 64-bit integer: written as a decimal string, read from a string or a number.",
            ]
        case .bool: return ["type": "boolean"]
        case .string: return ["type": "string"]
        case .bytes: return ["type": "string", "contentEncoding": "base64"]
        case .enum, .message, .group: return [:]
        }
    }

    private static func mapKeySchema(_ kind: FieldDescriptor.Kind) -> JSONValue {
        switch kind {
        case .bool: return ["enum": ["true", "false"]]
        case .string: return ["type": "string"]
        case .uint32, .uint64, .fixed32, .fixed64: return ["pattern": "^[0-9]+$"]
        default: return ["pattern": "^-?[0-9]+$"]
        }
    }
}

extension JSONValue {
    /// The schema with `comment` as its description, before the description it has (a 64-bit integer's).
    func describing(_ comment: String?) -> JSONValue {
        guard let comment else { return self }
        if case .object(let members) = self, let existing = members.first(where: { $0.key == "description" }),
            case .string(let text) = existing.value
        {
            return adding("description", .string(commentText(comment) + "\n\n" + text))
        }
        return adding("description", .string(commentText(comment)))
    }
}
