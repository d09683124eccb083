/// Base32 (RFC 4648 §6) without padding: the form authenticator apps expect for TOTP secrets.
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes bytes as upper-case base32 without padding.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 8 + 4) / 5)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 0x1F)])
            }
        }
        if bits > 0 {
            output.append(alphabet[Int(accumulator << UInt32(5 - bits) & 0x1F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base32, accepting lower case, spaces and trailing padding as users type them; nil if invalid.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var output = [UInt8]()
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            if character == UInt8(ascii: " ") || character == UInt8(ascii: "=") { continue }
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a")
            case UInt8(ascii: "2")...UInt8(ascii: "7"): value = character - UInt8(ascii: "2") + 26
            default: return nil
            }
            accumulator = accumulator << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }
}
