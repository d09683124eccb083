import Glibc

/// How the server names a client's method in metrics and logs, where a name only the client chose must not go.
public enum MethodNames {
    /// Longest method name written to a log line as it is; longer ones are cut (see `printable`).
    public static let printableLength = 128

    /// `method` itself when it is at most `printableLength` UTF-8 bytes, else its first bytes (cut on a character
    /// boundary) followed by "…" and its full length, so a 64 KiB name costs a log line 150 bytes.
    public static func printable(_ method: String) -> String {
        let utf8 = method.utf8
        guard utf8.count > printableLength else { return method }
        var end = utf8.index(utf8.startIndex, offsetBy: printableLength)
        // Back up over continuation bytes (10xxxxxx) to the start of a scalar, so the prefix stays valid UTF-8.
        while end > utf8.startIndex && utf8[end] & 0xC0 == 0x80 {
            end = utf8.index(before: end)
        }
        let prefix = String(decoding: utf8[..<end], as: UTF8.self)
        return "\(prefix)…(\(utf8.count) bytes)"
    }
}

/// Values found by a method name's UTF-8 bytes, without making a string of the name: a request's method arrives as
/// bytes, and a name over 15 bytes would be a new heap string per call.
///
/// Open addressing over FNV-1a hashes; built once, read-only after.
struct MethodTable<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var bytes: [UInt8]
        var hash: UInt64
        var name: String
        var value: Value
    }

    private let slots: [Entry?]
    private let mask: Int

    init(_ values: [String: Value]) {
        var size = 8
        while size < values.count * 2 { size *= 2 }
        var slots = [Entry?](repeating: nil, count: size)
        for (name, value) in values {
            let bytes = Array(name.utf8)
            let hash = bytes.withUnsafeBytes { Self.hash($0) }
            var index = Int(truncatingIfNeeded: hash) & (size - 1)
            while slots[index] != nil { index = (index + 1) & (size - 1) }
            slots[index] = Entry(bytes: bytes, hash: hash, name: name, value: value)
        }
        self.slots = slots
        self.mask = size - 1
    }

    /// The name (as the shared string it was stored with) and value of `name`, if present.
    func find(_ name: UnsafeRawBufferPointer) -> (name: String, value: Value)? {
        let hash = Self.hash(name)
        var index = Int(truncatingIfNeeded: hash) & mask
        while let entry = slots[index] {
            if entry.hash == hash && entry.bytes.count == name.count && Self.equal(entry.bytes, name) {
                return (entry.name, entry.value)
            }
            index = (index + 1) & mask
        }
        return nil
    }

    private static func equal(_ stored: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
        stored.withUnsafeBytes { stored in
            guard let start = stored.baseAddress, let other = bytes.baseAddress else { return bytes.isEmpty }
            return memcmp(start, other, bytes.count) == 0
        }
    }

    private static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }
}
