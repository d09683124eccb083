import Foundation
import RaveMessages

/// The OpenAPI document as JSONSerialization reads it, with a validator for the part of JSON Schema the document
/// uses: `$ref`, `type`, `enum`, `pattern`, `minimum`/`maximum`, `properties`, `additionalProperties`, `required`,
/// `items`, `propertyNames`, `anyOf`, `not` and base64 `contentEncoding`.
struct OpenAPIJSON {
    let paths: [String: [String: Any]]
    let schemas: [String: [String: Any]]

    init() throws {
        let root = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any] ?? [:]
        paths = root["paths"] as? [String: [String: Any]] ?? [:]
        schemas = (root["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]] ?? [:]
    }

    /// The message an operation's request body or response names for `application/json`.
    static func jsonReference(in bodyOrResponse: Any?) -> String? {
        let content = (bodyOrResponse as? [String: Any])?["content"] as? [String: Any]
        let schema = (content?["application/json"] as? [String: Any])?["schema"] as? [String: Any]
        return (schema?["$ref"] as? String)?.replacingOccurrences(of: "#/components/schemas/", with: "")
    }

    /// What makes `value` invalid for `schema`, one line each; empty when it is valid.
    func violations(of value: Any, against schema: [String: Any], at path: String) -> [String] {
        if let reference = schema["$ref"] as? String {
            let name = reference.replacingOccurrences(of: "#/components/schemas/", with: "")
            guard let target = schemas[name] else { return ["\(path): unknown \(reference)"] }
            return violations(of: value, against: target, at: path)
        }
        var found: [String] = []
        if let branches = schema["anyOf"] as? [[String: Any]],
            !branches.contains(where: { violations(of: value, against: $0, at: path).isEmpty })
        {
            found.append("\(path): matches no branch of anyOf")
        }
        if let excluded = schema["not"] as? [String: Any], violations(of: value, against: excluded, at: path).isEmpty {
            found.append("\(path): matches a schema it must not")
        }
        if let type = schema["type"] {
            let allowed = (type as? [String]) ?? [type as? String ?? ""]
            guard allowed.contains(where: { Self.isOfType(value, $0) }) else {
                return found + ["\(path): \(value) is not \(allowed.joined(separator: " or "))"]
            }
        }
        if let names = schema["enum"] as? [String], !names.contains(value as? String ?? "\u{0}") {
            found.append("\(path): \(value) is none of \(names)")
        }
        if let text = value as? String {
            found += stringViolations(text, schema: schema, at: path)
        }
        if let number = value as? NSNumber, !Self.isBoolean(number) {
            if let minimum = schema["minimum"] as? NSNumber, number.compare(minimum) == .orderedAscending {
                found.append("\(path): \(number) < \(minimum)")
            }
            if let maximum = schema["maximum"] as? NSNumber, number.compare(maximum) == .orderedDescending {
                found.append("\(path): \(number) > \(maximum)")
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, element) in array.enumerated() {
                found += violations(of: element, against: items, at: "\(path)[\(index)]")
            }
        }
        if let object = value as? [String: Any] {
            found += objectViolations(object, schema: schema, at: path)
        }
        return found
    }

    private func stringViolations(_ text: String, schema: [String: Any], at path: String) -> [String] {
        var found: [String] = []
        if let pattern = schema["pattern"] as? String,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            found.append("\(path): \"\(text)\" does not match \(pattern)")
        }
        if schema["contentEncoding"] as? String == "base64", Data(base64Encoded: text) == nil {
            found.append("\(path): \"\(text)\" is not base64")
        }
        return found
    }

    private func objectViolations(_ object: [String: Any], schema: [String: Any], at path: String) -> [String] {
        var found: [String] = []
        let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
        for key in (schema["required"] as? [String] ?? []) where object[key] == nil {
            found.append("\(path): \(key) is missing")
        }
        for (key, member) in object.sorted(by: { $0.key < $1.key }) {
            if let names = schema["propertyNames"] as? [String: Any] {
                found += violations(of: key, against: names, at: "\(path) key \(key)")
            }
            if let property = properties[key] {
                found += violations(of: member, against: property, at: "\(path).\(key)")
            } else if let additional = schema["additionalProperties"] as? [String: Any] {
                found += violations(of: member, against: additional, at: "\(path).\(key)")
            } else if schema["additionalProperties"] as? Bool == false {
                found.append("\(path): \(key) is not a property")
            }
        }
        return found
    }

    private static func isOfType(_ value: Any, _ type: String) -> Bool {
        switch type {
        case "object": return value is [String: Any]
        case "array": return value is [Any]
        case "string": return value is String
        case "boolean": return (value as? NSNumber).map(isBoolean) ?? false
        case "number": return (value as? NSNumber).map { !isBoolean($0) } ?? false
        case "integer":
            guard let number = value as? NSNumber, !isBoolean(number) else { return false }
            return number.doubleValue.rounded() == number.doubleValue
        case "null": return value is NSNull
        default: return false
        }
    }

    /// JSONSerialization gives JSON booleans the Objective-C type `c`; numbers never have it.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        number.objCType.pointee == CChar(UInt8(ascii: "c")) || number.objCType.pointee == CChar(UInt8(ascii: "B"))
    }
}
