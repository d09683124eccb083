/// Install-link short codes: 96 random bits as 16 base64url characters, so codes cannot be guessed or walked.
///
/// `SystemRandomNumberGenerator` reads the kernel's CSPRNG (getrandom on Linux), which is what an unguessable
/// token needs.
enum InstallCode {
    static let length = 16
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var characters: [UInt8] = []
        characters.reserveCapacity(length)
        // Two 64-bit draws give 16 × 6 = 96 bits, one character per six bits.
        for _ in 0..<2 {
            var bits = generator.next() as UInt64
            for _ in 0..<(length / 2) {
                characters.append(alphabet[Int(bits & 0x3F)])
                bits >>= 6
            }
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// INVALID_ARGUMENT unless `code` has the shape `random()` produces.
    static func validate(_ code: String) throws(GiftsError) -> String {
        guard code.utf8.count == length, code.utf8.allSatisfy({ alphabet.contains($0) }) else {
            throw .invalidArgument("code must be \(length) characters of A–Z, a–z, 0–9, '-' or '_'")
        }
        return code
    }
}
