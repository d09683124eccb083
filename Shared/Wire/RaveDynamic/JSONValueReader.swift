import Foundation

/// Turns JSONSerialization's output into dynamic messages, checking each value against its field.
struct JSONValueReader {
    mutating func message(_ object: Any, schema: MessageSchema, path: String) throws(DynamicError) -> DynamicMessage {
        guard let dictionary = object as? [String: Any] else {
            throw mismatch(path.isEmpty ? schema.fullName : path, expected: "an object", got: object)
        }
        var result = DynamicMessage(schema: schema)
        var oneofMembers: [Int: String] = [:]
        for key in dictionary.keys.sorted() {
            let value = dictionary[key] ?? NSNull()
            let fieldPath = path.isEmpty ? key : "\(path).\(key)"
            guard let field = schema.field(named: key) else {
                throw DynamicError(.unknownField, "\(fieldPath): \(schema.fullName) has no field \"\(key)\"")
            }
            // null means "default" for every field type (google.protobuf.Value is not used here).
            if value is NSNull { continue }
            if let group = field.oneofGroup {
                if let other = oneofMembers[group] {
                    throw DynamicError(.invalidJSON, "\(fieldPath): \(other) and \(key) belong to one oneof; set one")
                }
                oneofMembers[group] = key
            }
            try result.setValue(try fieldValue(value, field: field, path: fieldPath), of: field)
        }
        return result
    }

    private mutating func fieldValue(
        _ value: Any, field: FieldSchema, path: String
    ) throws(DynamicError)
        -> DynamicValue
    {
        if field.isMap, let entry = field.messageType, entry.fields.count == 2 {
            guard let object = value as? [String: Any] else { throw mismatch(path, expected: "an object", got: value) }
            var entries: [DynamicValue] = []
            for key in object.keys.sorted() {
                var message = DynamicMessage(schema: entry)
                try message.setValue(try mapKey(key, field: entry.fields[0], path: path), of: entry.fields[0])
                let elementPath = "\(path)[\"\(key)\"]"
                try message.setValue(
                    try element(object[key] ?? NSNull(), field: entry.fields[1], path: elementPath), of: entry.fields[1]
                )
                entries.append(.message(message))
            }
            return .list(entries)
        }
        if field.isRepeated {
            guard let array = value as? [Any] else { throw mismatch(path, expected: "an array", got: value) }
            var elements: [DynamicValue] = []
            for (index, item) in array.enumerated() {
                elements.append(try element(item, field: field, path: "\(path)[\(index)]"))
            }
            return .list(elements)
        }
        return try element(value, field: field, path: path)
    }

    private mutating func element(_ value: Any, field: FieldSchema, path: String) throws(DynamicError) -> DynamicValue {
        switch field.type {
        case .int32, .sint32, .sfixed32: return .int32(try integer(value, path: path, as: Int32.self))
        case .int64, .sint64, .sfixed64: return .int64(try integer(value, path: path, as: Int64.self))
        case .uint32, .fixed32: return .uint32(try integer(value, path: path, as: UInt32.self))
        case .uint64, .fixed64: return .uint64(try integer(value, path: path, as: UInt64.self))
        case .double: return .double(try floatingPoint(value, path: path))
        case .float: return .float(Float(try floatingPoint(value, path: path)))
        case .bool:
            guard let number = value as? NSNumber, isBoolean(number) else {
                throw mismatch(path, expected: "true or false", got: value)
            }
            return .bool(number.boolValue)
        case .string:
            guard let text = value as? String else { throw mismatch(path, expected: "a string", got: value) }
            return .string(text)
        case .bytes:
            guard let text = value as? String, let data = decodeBase64(text) else {
                throw mismatch(path, expected: "base64 text", got: value)
            }
            return .bytes(data)
        case .enumeration:
            guard let enumType = field.enumType else { throw mismatch(path, expected: "an enum", got: value) }
            if let name = value as? String {
                guard let number = enumType.number(named: name) else {
                    let allowed = enumType.values.map(\.name).joined(separator: ", ")
                    throw DynamicError(
                        .invalidJSON, "\(path): \(enumType.fullName) has no value \(name); one of \(allowed)")
                }
                return .enumeration(number)
            }
            return .enumeration(try integer(value, path: path, as: Int32.self))
        case .message:
            guard let messageType = field.messageType else { throw mismatch(path, expected: "a message", got: value) }
            return .message(try message(value, schema: messageType, path: path))
        }
    }

    private func mapKey(_ key: String, field: FieldSchema, path: String) throws(DynamicError) -> DynamicValue {
        let keyPath = "\(path)[\"\(key)\"]"
        switch field.type {
        case .string: return .string(key)
        case .bool:
            guard key == "true" || key == "false" else {
                throw mismatch(keyPath, expected: "a true/false key", got: key)
            }
            return .bool(key == "true")
        case .int32, .sint32, .sfixed32: return .int32(try integer(key, path: keyPath, as: Int32.self))
        case .int64, .sint64, .sfixed64: return .int64(try integer(key, path: keyPath, as: Int64.self))
        case .uint32, .fixed32: return .uint32(try integer(key, path: keyPath, as: UInt32.self))
        default: return .uint64(try integer(key, path: keyPath, as: UInt64.self))
        }
    }

    /// An integer from a JSON number or a decimal string, within `Value`'s range.
    private func integer<Value: FixedWidthInteger>(
        _ value: Any, path: String, as type: Value.Type
    )
        throws(DynamicError) -> Value
    {
        let range = "\(Value.min)…\(Value.max)"
        if let text = value as? String {
            guard let number = Value(text.trimmingCharacters(in: .whitespaces)) else {
                throw mismatch(path, expected: "an integer in \(range)", got: value)
            }
            return number
        }
        guard let number = value as? NSNumber, !isBoolean(number) else {
            throw mismatch(path, expected: "an integer in \(range)", got: value)
        }
        let converted: Value?
        switch number.objCType.pointee {
        case CChar(UInt8(ascii: "Q")): converted = Value(exactly: number.uint64Value)
        case CChar(UInt8(ascii: "d")), CChar(UInt8(ascii: "f")): converted = Value(exactly: number.doubleValue)
        default: converted = Value(exactly: number.int64Value)
        }
        guard let converted else { throw mismatch(path, expected: "an integer in \(range)", got: value) }
        return converted
    }

    private func floatingPoint(_ value: Any, path: String) throws(DynamicError) -> Double {
        if let text = value as? String {
            switch text {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default:
                guard let number = Double(text) else { throw mismatch(path, expected: "a number", got: value) }
                return number
            }
        }
        guard let number = value as? NSNumber, !isBoolean(number) else {
            throw mismatch(path, expected: "a number", got: value)
        }
        return number.doubleValue
    }

    /// Foundation gives JSON booleans the Objective-C type `c` (char); JSON numbers never get it.
    private func isBoolean(_ number: NSNumber) -> Bool {
        number.objCType.pointee == CChar(UInt8(ascii: "c")) || number.objCType.pointee == CChar(UInt8(ascii: "B"))
    }

    /// Standard or URL-safe base64, padding optional, as protobuf's JSON mapping accepts.
    private func decodeBase64(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }

    private func mismatch(_ path: String, expected: String, got value: Any) -> DynamicError {
        let shown: String
        switch value {
        case let text as String: shown = "\"\(text)\""
        case let number as NSNumber: shown = isBoolean(number) ? (number.boolValue ? "true" : "false") : "\(number)"
        case is [Any]: shown = "an array"
        case is [String: Any]: shown = "an object"
        default: shown = "\(value)"
        }
        return DynamicError(.invalidJSON, "\(path): expected \(expected), got \(shown)")
    }
}
