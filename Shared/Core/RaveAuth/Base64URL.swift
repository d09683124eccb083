/// Base64url without padding (RFC 4648 §5), the encoding of every JOSE field.
///
/// Hand-written because Foundation's `Data(base64Encoded:)` only knows the standard alphabet with padding, and
/// translating strings back and forth on every token costs more than this loop.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// Encodes bytes as base64url without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        let encoded: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0), to: &output) }
        if encoded == nil { Array(bytes).withUnsafeBytes { append($0, to: &output) } }
        return String(decoding: output, as: UTF8.self)
    }

    /// The length of the encoding of `byteCount` bytes.
    public static func encodedCount(_ byteCount: Int) -> Int { (byteCount * 4 + 2) / 3 }

    /// Appends the base64url encoding (no padding) of `bytes` to `output`: tokens are assembled in one buffer.
    public static func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.reserveCapacity(output.count + encodedCount(bytes.count))
        let whole = bytes.count - bytes.count % 3
        var index = 0
        while index < whole {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(chunk >> 18 & 0x3F)])
            output.append(alphabet[Int(chunk >> 12 & 0x3F)])
            output.append(alphabet[Int(chunk >> 6 & 0x3F)])
            output.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        guard index < bytes.count else { return }
        let second = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
        let chunk = UInt32(bytes[index]) << 16 | second << 8
        output.append(alphabet[Int(chunk >> 18 & 0x3F)])
        output.append(alphabet[Int(chunk >> 12 & 0x3F)])
        if index + 1 < bytes.count { output.append(alphabet[Int(chunk >> 6 & 0x3F)]) }
    }

    /// Decodes base64url; returns nil for characters outside the alphabet, padding, or an impossible length.
    ///
    /// Strict on purpose: JOSE forbids padding and non-canonical trailing bits, and accepting variants would let
    /// two different strings carry the same signature.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let input = Array(text.utf8)
        if input.count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in input {
            let value = decodingTable[Int(character)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero, or the encoding is not canonical.
        if bits > 0 && accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return output
    }
}
