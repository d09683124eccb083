/// One-time backup codes for two-factor accounts: shown once at enrolment, stored only as hashes.
///
/// A code is 10 characters from an alphabet without look-alikes (no 0/o, 1/i/l), shown as `xxxxx-xxxxx`:
/// about 49 bits each, too many to guess online, so an unsalted SHA-256 is enough to store them.
public enum BackupCodes {
    /// Codes generated per enrolment.
    public static let count = 10
    static let length = 10
    static let alphabet = Array("23456789abcdefghjkmnpqrstuvwxyz".utf8)

    /// `count` new random codes, formatted `xxxxx-xxxxx`.
    public static func generate(count: Int = BackupCodes.count) throws(CryptoError) -> [String] {
        var codes: [String] = []
        while codes.count < count {
            var characters: [UInt8] = []
            while characters.count < length {
                // Rejection sampling keeps every character equally likely (256 is not a multiple of 31).
                for byte in try SecureRandom.bytes(count: length * 2) where byte < 248 && characters.count < length {
                    characters.append(alphabet[Int(byte) % alphabet.count])
                }
            }
            let code =
                String(decoding: characters.prefix(5), as: UTF8.self) + "-"
                + String(decoding: characters.suffix(5), as: UTF8.self)
            if !codes.contains(code) { codes.append(code) }
        }
        return codes
    }

    /// The value to store for `code`: SHA-256 of its normalised form; nil when `code` cannot be a backup code.
    ///
    /// Normalising (case, dashes, spaces) means a code typed as `ABCDE FGHJK` matches `abcde-fghjk`.
    public static func hash(_ code: String) -> [UInt8]? {
        guard let normalized = normalize(code) else { return nil }
        return Digest.sha256(normalized)
    }

    /// The index in `storedHashes` of the hash `code` matches, or nil.
    ///
    /// Compares against every hash in constant
    /// time, so timing reveals nothing about which codes exist.
    public static func matchingIndex(of code: String, in storedHashes: [[UInt8]]) -> Int? {
        guard let candidate = hash(code) else { return nil }
        var matched: Int?
        for (index, stored) in storedHashes.enumerated() where ConstantTime.equals(candidate, stored) {
            matched = matched ?? index
        }
        return matched
    }

    private static func normalize(_ code: String) -> [UInt8]? {
        var characters: [UInt8] = []
        for byte in code.utf8 {
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: " ") { continue }
            let lower = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            guard alphabet.contains(lower) else { return nil }
            characters.append(lower)
        }
        return characters.count == length ? characters : nil
    }
}
