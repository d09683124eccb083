import Foundation

/// A JSON value whose objects keep their members in the order they were written, so a generated document reads
/// in the order chosen for it and regenerates byte for byte.
indirect enum JSONValue {
    case string(String)
    case integer(Int)
    case bool(Bool)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// The value indented by two spaces per level, as `JSON.stringify(value, null, 2)` writes it.
    var prettyText: String {
        var text = ""
        write(into: &text, depth: 0)
        return text
    }

    private func write(into text: inout String, depth: Int) {
        switch self {
        case .string(let string): Self.writeString(string, into: &text)
        case .integer(let number): text += String(number)
        case .bool(let flag): text += flag ? "true" : "false"
        case .array(let elements):
            Self.writeContainer("[", "]", elements.map { (key: nil, value: $0) }, into: &text, depth: depth)
        case .object(let members):
            Self.writeContainer("{", "}", members.map { (key: $0.key, value: $0.value) }, into: &text, depth: depth)
        }
    }

    /// An array's elements (no keys) or an object's members, one per line; `[]` and `{}` when empty.
    private static func writeContainer(
        _ open: String, _ close: String, _ members: [(key: String?, value: JSONValue)], into text: inout String,
        depth: Int
    ) {
        guard !members.isEmpty else {
            text += open + close
            return
        }
        text += open
        for (index, member) in members.enumerated() {
            text += index == 0 ? "\n" : ",\n"
            text += String(repeating: "  ", count: depth + 1)
            if let key = member.key {
                writeString(key, into: &text)
                text += ": "
            }
            member.value.write(into: &text, depth: depth + 1)
        }
        text += "\n" + String(repeating: "  ", count: depth) + close
    }

    /// A JSON string as Foundation writes it (quotes, backslashes and control characters escaped; `/` and
    /// non-ASCII text as they are).
    private static func writeString(_ string: String, into text: inout String) {
        let data = try? JSONSerialization.data(
            withJSONObject: string, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        text += data.map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Members in the order written (a dictionary literal keeps its order here).
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension JSONValue {
    /// An object of the members whose value is present, in order: optional members are left out when nil.
    static func members(_ elements: [(String, JSONValue?)]) -> JSONValue {
        .object(elements.compactMap { key, value in value.map { (key: key, value: $0) } })
    }

    /// This object with `member` appended (or a replaced value, when the key is present); other values unchanged.
    func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
        return .object(members)
    }
}
