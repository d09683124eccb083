import Foundation

/// The keys that seal secrets at rest (AES-256-GCM), as read from a key file such as `RAVE_SECRET_KEY_FILE`.
///
/// **File format**: UTF-8 text, one key per line, `<key id> <key>`: the id is 1…32 of `A-Z a-z 0-9 . _ -`, the key
/// is 32 random bytes in standard base64 (`openssl rand -base64 32`). Blank lines and lines starting with `#` are
/// ignored. The **first** key seals everything new; every key opens what it sealed. Rotation is therefore: put a
/// new key first, restart, re-seal what the old key sealed, then delete the old line.
///
/// **Sealed form** (`seal`): `01 ‖ n ‖ key id (n bytes) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`. The associated data
/// is the header (`01 ‖ n ‖ key id`) followed by the caller's `context`, which names the row the secret belongs to,
/// so a sealed value copied into another row (or another column) does not open there.
public final class SecretKeyRing: Sendable {
    /// One key of the ring.
    public struct Entry: Sendable {
        /// The id stored with everything the key seals.
        public let id: String
        /// The key.
        public let key: SymmetricKey

        /// An entry; `id` must be 1…32 of `A-Z a-z 0-9 . _ -`.
        public init(id: String, key: SymmetricKey) throws(CryptoError) {
            guard SecretKeyRing.isValidKeyID(id) else {
                throw .configuration("secret key id must be 1…32 of A-Z a-z 0-9 . _ -, got \"\(id)\"")
            }
            self.id = id
            self.key = key
        }
    }

    /// The keys in file order; the first seals.
    public let entries: [Entry]
    private let keysByID: [String: SymmetricKey]

    /// The version byte every sealed value starts with.
    static let formatVersion: UInt8 = 1

    /// A ring of `entries`; there must be at least one, with distinct ids.
    public init(entries: [Entry]) throws(CryptoError) {
        guard !entries.isEmpty else { throw .configuration("the secret key file holds no key") }
        var keysByID: [String: SymmetricKey] = [:]
        for entry in entries {
            guard keysByID.updateValue(entry.key, forKey: entry.id) == nil else {
                throw .configuration("the secret key file names key id \"\(entry.id)\" twice")
            }
        }
        self.entries = entries
        self.keysByID = keysByID
    }

    /// The id of the key that seals.
    public var primaryKeyID: String { entries[0].id }

    // MARK: - The key file

    /// Parses a key file's text.
    public convenience init(fileContents: String) throws(CryptoError) {
        var entries: [Entry] = []
        for (index, rawLine) in fileContents.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            .enumerated()
        {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else {
                throw .configuration("secret key file line \(index + 1) must be \"<key id> <base64 key>\"")
            }
            guard let bytes = Data(base64Encoded: String(fields[1])), bytes.count == SymmetricKey.byteCount else {
                throw .configuration(
                    "secret key file line \(index + 1): the key must be \(SymmetricKey.byteCount) bytes in base64")
            }
            entries.append(try Entry(id: String(fields[0]), key: SymmetricKey(bytes: Array(bytes))))
        }
        try self.init(entries: entries)
    }

    /// Reads the key file at `path`, which other users must not be able to read or write.
    ///
    /// A symbolic link is followed (Kubernetes mounts secrets as links) and the file it leads to is checked.
    public convenience init(contentsOfFile path: String) throws(CryptoError) {
        let attributes: [FileAttributeKey: Any]
        let data: Data
        do {
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            attributes = try FileManager.default.attributesOfItem(atPath: resolved)
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .configuration("cannot read the secret key file \(path): \(error.localizedDescription)")
        }
        if let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o007 != 0 {
            throw .configuration(
                "the secret key file \(path) is open to other users (mode \(String(mode, radix: 8))); "
                    + "chmod 600 it (640 for a service group)")
        }
        try self.init(fileContents: String(decoding: data, as: UTF8.self))
    }

    /// A new key file line, `<id> <32 random bytes in base64>`.
    public static func newKeyLine(id: String) throws(CryptoError) -> String {
        guard isValidKeyID(id) else { throw .invalidArgument("secret key id must be 1…32 of A-Z a-z 0-9 . _ -") }
        return id + " " + Data(try SecureRandom.bytes(count: SymmetricKey.byteCount)).base64EncodedString()
    }

    static func isValidKeyID(_ id: String) -> Bool {
        (1...32).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    // MARK: - Sealing

    /// Seals `plaintext` with the first key, bound to `context` (the row it belongs to).
    public func seal(_ plaintext: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        let primary = entries[0]
        let header = [Self.formatVersion, UInt8(primary.id.utf8.count)] + Array(primary.id.utf8)
        let box = try AES256GCM.seal(plaintext, using: primary.key, authenticating: header + context)
        return header + box.combined
    }

    /// Opens a value `seal` made, with the key its header names, for the same `context`.
    ///
    /// Throws `sealedDataRejected` when the value is malformed, names a key this ring lacks, or does not
    /// authenticate (wrong key bytes, another row's context, altered bytes).
    public func open(_ sealed: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let keyID = Self.keyID(ofSealed: sealed) else {
            throw .sealedDataRejected("the stored secret is not in the sealed format")
        }
        guard let key = keysByID[keyID] else {
            throw .sealedDataRejected(
                "the stored secret was sealed with key \"\(keyID)\", which the secret key file does not hold")
        }
        let headerLength = 2 + keyID.utf8.count
        let box = try AES256GCM.SealedBox(combined: sealed[headerLength...])
        return try AES256GCM.open(box, using: key, authenticating: Array(sealed.prefix(headerLength)) + context)
    }

    /// The id of the key that sealed `sealed`; nil when it is not in the sealed format.
    public static func keyID(ofSealed sealed: [UInt8]) -> String? {
        guard sealed.count >= 2, sealed[0] == formatVersion else { return nil }
        let length = Int(sealed[1])
        guard sealed.count >= 2 + length + AES256GCM.nonceByteCount + AES256GCM.tagByteCount else { return nil }
        let id = String(decoding: sealed[2..<(2 + length)], as: UTF8.self)
        return isValidKeyID(id) ? id : nil
    }
}
