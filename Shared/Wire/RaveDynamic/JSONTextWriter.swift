import Foundation
import RaveJSON

/// Writes dynamic messages as protobuf's canonical JSON, fields in number order.
struct JSONTextWriter {
    let pretty: Bool
    private(set) var text = ""

    init(pretty: Bool) {
        self.pretty = pretty
    }

    mutating func writeMessage(_ message: DynamicMessage, depth: Int) {
        let fields = message.setFields
        guard !fields.isEmpty else {
            text += "{}"
            return
        }
        text += "{"
        for (position, (field, value)) in fields.enumerated() {
            if position > 0 { text += "," }
            newline(depth + 1)
            writeString(field.jsonName)
            text += pretty ? ": " : ":"
            writeField(value, field: field, depth: depth + 1)
        }
        newline(depth)
        text += "}"
    }

    private mutating func writeField(_ value: DynamicValue, field: FieldSchema, depth: Int) {
        guard case .list(let elements) = value else {
            writeElement(value, field: field, depth: depth)
            return
        }
        if field.isMap, let entry = field.messageType, entry.fields.count == 2 {
            text += "{"
            for (position, element) in elements.enumerated() {
                guard case .message(let pair) = element else { continue }
                if position > 0 { text += "," }
                newline(depth + 1)
                writeString(mapKey(pair.value(of: entry.fields[0])))
                text += pretty ? ": " : ":"
                writeElement(pair.value(of: entry.fields[1]), field: entry.fields[1], depth: depth + 1)
            }
            newline(depth)
            text += "}"
            return
        }
        text += "["
        for (position, element) in elements.enumerated() {
            if position > 0 { text += pretty ? ", " : "," }
            writeElement(element, field: field, depth: depth)
        }
        text += "]"
    }

    private mutating func writeElement(_ value: DynamicValue, field: FieldSchema, depth: Int) {
        switch value {
        case .double(let number): writeFloatingPoint(number, shortest: "\(number)")
        case .float(let number): writeFloatingPoint(Double(number), shortest: "\(number)")
        case .int32(let number): text += "\(number)"
        case .uint32(let number): text += "\(number)"
        // 64-bit integers are strings: JavaScript's numbers lose precision past 2^53.
        case .int64(let number): text += "\"\(number)\""
        case .uint64(let number): text += "\"\(number)\""
        case .bool(let flag): text += flag ? "true" : "false"
        case .string(let string): writeString(string)
        case .bytes(let data): writeString(Data(data).base64EncodedString())
        case .enumeration(let number):
            if let name = field.enumType?.name(of: number) { writeString(name) } else { text += "\(number)" }
        case .message(let message): writeMessage(message, depth: depth)
        case .list: writeField(value, field: field, depth: depth)
        }
    }

    private mutating func writeFloatingPoint(_ number: Double, shortest: String) {
        if number.isNaN {
            text += "\"NaN\""
        } else if number.isInfinite {
            text += number < 0 ? "\"-Infinity\"" : "\"Infinity\""
        } else if number == number.rounded(), abs(number) < 1e15 {
            text += "\(Int64(number))"
        } else {
            text += shortest
        }
    }

    private func mapKey(_ value: DynamicValue) -> String {
        switch value {
        case .string(let key): return key
        case .bool(let key): return key ? "true" : "false"
        case .int32(let key): return "\(key)"
        case .int64(let key): return "\(key)"
        case .uint32(let key): return "\(key)"
        case .uint64(let key): return "\(key)"
        default: return ""
        }
    }

    private mutating func writeString(_ string: String) {
        text += JSONString.quoted(string)
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        text += "\n" + String(repeating: "  ", count: depth)
    }
}
