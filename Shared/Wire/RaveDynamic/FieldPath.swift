/// A path to one value inside a message, like `user.id` or `results[0].balance.amount`.
///
/// Field names are separated by dots, each repeated field takes an index, and names may be .proto names
/// or JSON names.
///
/// A path is only text until `resolve(in:)` checks it against a message type; batch references are
/// resolved once, when the batch is validated, and the resolved paths copy values between calls.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    /// One step: a field name and, for a repeated field, the element's index.
    public struct Component: Sendable, Hashable {
        public let name: String
        public let index: Int?
    }

    /// The steps, outermost first.
    public let components: [Component]

    /// Parses `text`; fails when it is empty, has an empty step, or a malformed `[index]`.
    public init(_ text: String) throws(DynamicError) {
        var components: [Component] = []
        for step in text.split(separator: ".", omittingEmptySubsequences: false) {
            var name = Substring(step)
            var index: Int?
            if let open = step.firstIndex(of: "[") {
                guard step.hasSuffix("]"),
                    let number = Int(step[step.index(after: open)..<step.index(before: step.endIndex)]),
                    number >= 0
                else {
                    throw DynamicError(.invalidPath, "field path \"\(text)\": \"\(step)\" needs an index like name[0]")
                }
                name = step[..<open]
                index = number
            }
            guard !name.isEmpty, name.allSatisfy({ $0 == "_" || $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw DynamicError(.invalidPath, "field path \"\(text)\" must be field names separated by dots")
            }
            components.append(Component(name: String(name), index: index))
        }
        self.components = components
    }

    public var description: String {
        components.map { component in component.index.map { "\(component.name)[\($0)]" } ?? component.name }
            .joined(separator: ".")
    }

    /// Checks every step against `schema`: each field exists, every step but the last is a message, and
    /// every repeated field has an index (and only repeated fields have one).
    public func resolve(in schema: MessageSchema) throws(DynamicError) -> ResolvedFieldPath {
        var fields: [FieldSchema] = []
        var current: MessageSchema? = schema
        for (position, component) in components.enumerated() {
            guard let message = current else {
                throw DynamicError(
                    .invalidPath,
                    "field path \"\(self)\": \(fields.last?.name ?? "") is not a message, it has no fields")
            }
            guard let field = message.field(named: component.name) else {
                throw DynamicError(
                    .unknownField, "field path \"\(self)\": \(message.fullName) has no field \(component.name)")
            }
            if field.isMap {
                throw DynamicError(.invalidPath, "field path \"\(self)\": map field \(field.name) cannot be addressed")
            }
            if field.isRepeated && component.index == nil {
                throw DynamicError(
                    .invalidPath,
                    "field path \"\(self)\": \(field.name) is repeated; name one element, like \(field.name)[0]")
            }
            if !field.isRepeated && component.index != nil {
                throw DynamicError(
                    .invalidPath, "field path \"\(self)\": \(field.name) is not repeated and takes no index")
            }
            fields.append(field)
            current = position < components.count - 1 && field.type == .message ? field.messageType : nil
        }
        guard let target = fields.last else { throw DynamicError(.invalidPath, "field path is empty") }
        return ResolvedFieldPath(path: self, root: schema, fields: fields, target: target)
    }
}

/// A field path checked against a message type; reads and writes one value.
public struct ResolvedFieldPath: Sendable {
    /// The path as written.
    public let path: FieldPath
    /// The message type the path starts from.
    public let root: MessageSchema
    /// The field of each step.
    public let fields: [FieldSchema]
    /// The field the path ends at; the value is one element of it when it is repeated.
    public let target: FieldSchema

    /// The value's type as a .proto would write it (`int64`, `rave.identity.v1.User`).
    public var valueTypeDescription: String {
        switch target.type {
        case .message: return target.messageType?.fullName ?? "message"
        case .enumeration: return target.enumType?.fullName ?? "enum"
        default: return target.type.rawValue
        }
    }

    /// Fails unless values at `source` can be stored at this path: the same scalar type (`sint64` and
    /// `int64` both hold 64-bit integers), the same enum, or the same message type.
    public func checkAccepts(valuesAt source: ResolvedFieldPath) throws(DynamicError) {
        let compatible: Bool
        switch (target.type, source.target.type) {
        case (.message, .message): compatible = target.messageType === source.target.messageType
        case (.enumeration, .enumeration): compatible = target.enumType === source.target.enumType
        default: compatible = target.type.valueKind == source.target.type.valueKind
        }
        guard compatible else {
            throw DynamicError(
                .typeMismatch,
                "cannot copy \(source.path) (\(source.valueTypeDescription)) of \(source.root.fullName) into "
                    + "\(path) (\(valueTypeDescription)) of \(root.fullName)")
        }
    }

    /// The value at the path; a default when a message along the way is unset.
    public func value(in message: DynamicMessage) throws(DynamicError) -> DynamicValue {
        try checkRoot(message)
        var current = message
        var value = DynamicValue.list([])
        for (component, field) in zip(path.components, fields) {
            value = current.value(of: field)
            if let index = component.index {
                guard case .list(let elements) = value, index < elements.count else {
                    throw DynamicError(
                        .indexOutOfRange, "field path \"\(path)\": \(field.name) has no element \(index)")
                }
                value = elements[index]
            }
            if case .message(let nested) = value { current = nested }
        }
        return value
    }

    /// The value at the path in a message encoded as protobuf bytes.
    public func value(inProtobufBytes bytes: [UInt8]) throws(DynamicError) -> DynamicValue {
        try value(in: DynamicMessage(schema: root, protobufBytes: bytes))
    }

    /// Stores `value` at the path, creating unset messages along the way; an index one past the end of a
    /// repeated field appends an element.
    public func setValue(_ value: DynamicValue, in message: inout DynamicMessage) throws(DynamicError) {
        try checkRoot(message)
        try Self.set(value, in: &message, steps: Array(zip(path.components, fields))[...], path: path)
    }

    /// Stores `value` at the path in a message encoded as protobuf bytes, and returns the new encoding.
    public func setValue(_ value: DynamicValue, inProtobufBytes bytes: [UInt8]) throws(DynamicError) -> [UInt8] {
        var message = try DynamicMessage(schema: root, protobufBytes: bytes)
        try setValue(value, in: &message)
        return message.protobufBytes()
    }

    private func checkRoot(_ message: DynamicMessage) throws(DynamicError) {
        guard message.schema === root else {
            throw DynamicError(
                .typeMismatch, "field path \"\(path)\" is for \(root.fullName), not \(message.schema.fullName)")
        }
    }

    private static func set(
        _ value: DynamicValue, in message: inout DynamicMessage,
        steps: ArraySlice<(FieldPath.Component, FieldSchema)>, path: FieldPath
    ) throws(DynamicError) {
        guard let (component, field) = steps.first else { return }
        let rest = steps.dropFirst()
        func replaced(_ old: DynamicValue) throws(DynamicError) -> DynamicValue {
            guard !rest.isEmpty else { return value }
            guard case .message(var nested) = old else { return old }
            try set(value, in: &nested, steps: rest, path: path)
            return .message(nested)
        }
        guard let index = component.index else {
            try message.setValue(try replaced(message.value(of: field)), of: field)
            return
        }
        guard case .list(var elements) = message.value(of: field), index <= elements.count else {
            throw DynamicError(
                .indexOutOfRange, "field path \"\(path)\": \(field.name) has fewer than \(index) elements to append to")
        }
        if index == elements.count {
            elements.append(try replaced(DynamicValue.elementDefault(of: field)))
        } else {
            elements[index] = try replaced(elements[index])
        }
        try message.setValue(.list(elements), of: field)
    }
}
