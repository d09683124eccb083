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
/// Open addressing over a word-at-a-time hash; built once, read-only after. A lookup reads only plain words and
/// bytes (the slots' hashes, the names' bytes) and copies out the name and value of the slot it finds, so a call
/// costs no reference counting for the slots it passes; a class, so reaching it through the router is one
/// reference, not one per array.
final class MethodTable<Value: Sendable>: Sendable {
    /// Per slot: the hash of its name (meaningful when `lengths` is not -1).
    private let hashes: [UInt64]
    /// Per slot: the UTF-8 length of its name, -1 for an empty slot.
    private let lengths: [Int]
    /// Per slot: where its name's bytes start in `nameBytes`.
    private let offsets: [Int]
    private let nameBytes: [UInt8]
    private let names: [String]
    private let values: [Value?]
    private let mask: Int

    init(_ values: [String: Value]) {
        var size = 8
        while size < values.count * 2 { size *= 2 }
        var hashes = [UInt64](repeating: 0, count: size)
        var lengths = [Int](repeating: -1, count: size)
        var offsets = [Int](repeating: 0, count: size)
        var nameBytes: [UInt8] = []
        var names = [String](repeating: "", count: size)
        var slotValues = [Value?](repeating: nil, count: size)
        for (name, value) in values {
            let bytes = Array(name.utf8)
            let hash = bytes.withUnsafeBytes { Self.hash($0) }
            var index = Int(truncatingIfNeeded: hash) & (size - 1)
            while lengths[index] >= 0 { index = (index + 1) & (size - 1) }
            hashes[index] = hash
            lengths[index] = bytes.count
            offsets[index] = nameBytes.count
            nameBytes += bytes
            names[index] = name
            slotValues[index] = value
        }
        self.hashes = hashes
        self.lengths = lengths
        self.offsets = offsets
        self.nameBytes = nameBytes
        self.names = names
        self.values = slotValues
        self.mask = size - 1
    }

    /// The name (as the shared string it was stored with) and value of `name`, if present.
    func find(_ name: UnsafeRawBufferPointer) -> (name: String, value: Value)? {
        guard let slot = slot(of: name), let value = values[slot] else { return nil }
        return (names[slot], value)
    }

    /// The value of `name`, if present (`find` without the name's string).
    func value(of name: UnsafeRawBufferPointer) -> Value? {
        guard let slot = slot(of: name) else { return nil }
        return values[slot]
    }

    private func slot(of name: UnsafeRawBufferPointer) -> Int? {
        let hash = Self.hash(name)
        return hashes.withUnsafeBufferPointer { hashes in
            lengths.withUnsafeBufferPointer { lengths in
                nameBytes.withUnsafeBytes { stored -> Int? in
                    var index = Int(truncatingIfNeeded: hash) & mask
                    while lengths[index] >= 0 {
                        if hashes[index] == hash && lengths[index] == name.count
                            && Self.equal(stored, at: offsets[index], name)
                        {
                            return index
                        }
                        index = (index + 1) & mask
                    }
                    return nil
                }
            }
        }
    }

    private static func equal(_ stored: UnsafeRawBufferPointer, at offset: Int, _ bytes: UnsafeRawBufferPointer) -> Bool
    {
        guard let other = bytes.baseAddress, !bytes.isEmpty else { return true }
        guard let start = stored.baseAddress else { return false }
        return memcmp(start + offset, other, bytes.count) == 0
    }

    /// A hash of `bytes` eight at a time (a multiply and a shift per word): FNV-1a's multiply per byte was a
    /// chain of 20-odd dependent multiplies for a typical method name.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash = 0x9E37_79B9_7F4A_7C15 &* UInt64(truncatingIfNeeded: bytes.count &+ 1)
        guard let base = bytes.baseAddress else { return hash }
        var index = 0
        while index + 8 <= bytes.count {
            hash = (hash ^ base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 32
            index += 8
        }
        if index < bytes.count {
            var tail: UInt64 = 0
            for position in index..<bytes.count {
                tail |= UInt64(base.load(fromByteOffset: position, as: UInt8.self)) << (8 * UInt64(position - index))
            }
            hash = (hash ^ tail) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 32
        }
        return hash
    }
}
