/// A JSON string literal (RFC 8259, section 7): the one escaping rule every JSON text we write without
/// `JSONSerialization` follows (access tokens and key sets, the gateway's JSON, push payloads, export records).
///
/// The quote and the backslash are escaped, line feed, carriage return and tab as `\n`, `\r` and `\t`, every other
/// C0 control (U+0000…U+001F) and DEL (U+007F) as `\u00xx` in lower-case hex, so the text never carries a raw
/// control byte. Everything else, non-ASCII included, is written as its UTF-8 bytes; U+2028 and U+2029 are valid
/// JSON and stay as they are. A Swift `String` is always valid Unicode (bytes that were not valid UTF-8 became
/// U+FFFD when the string was made), so the output is always valid UTF-8.
///
/// Inlinable, so each caller's module specializes it for its string type: unspecialized, every byte went through
/// the standard library's generic iterator, and signing an access token spent more on its claims than on the rest.
public enum JSONString {
    /// `text` as a JSON string literal, quotes included.
    @inlinable
    public static func quoted(_ text: some StringProtocol) -> String {
        if !text.utf8.contains(where: needsEscape) { return "\"" + String(text) + "\"" }
        var bytes: [UInt8] = []
        append(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `text` as the UTF-8 bytes of a JSON string literal, quotes included.
    @inlinable
    public static func quotedBytes(_ text: some StringProtocol) -> [UInt8] {
        var bytes: [UInt8] = []
        append(text, to: &bytes)
        return bytes
    }

    /// Appends `text` as a JSON string literal, quotes included, to `bytes`.
    @inlinable
    public static func append(_ text: some StringProtocol, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + text.utf8.count + 2)
        bytes.append(quote)
        for byte in text.utf8 {
            guard needsEscape(byte) else {
                bytes.append(byte)
                continue
            }
            bytes.append(backslash)
            switch byte {
            case quote, backslash: bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            default:
                bytes += [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex(byte >> 4), hex(byte & 0xF)]
            }
        }
        bytes.append(quote)
    }

    /// Whether a byte of UTF-8 is written escaped (bytes of multi-byte sequences are all ≥ 0x80, so never).
    @inlinable @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == quote || byte == backslash || byte == 0x7F
    }

    @usableFromInline static var quote: UInt8 { UInt8(ascii: "\"") }
    @usableFromInline static var backslash: UInt8 { UInt8(ascii: "\\") }

    @inlinable @inline(__always)
    static func hex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
