/// Request metadata in its wire form: the request envelope's encoded map entries (field 3 of
/// `rave.rpc.v1.Request`), ready to be sent again.
///
/// For proxies: the gateway passes a client's metadata on to a service by copying the entries it keeps and
/// appending its own, instead of decoding them into a dictionary and encoding that again. Services read
/// `RequestContext.metadata`; this is the same metadata as bytes.
public struct EncodedMetadata: Hashable, Sendable {
    /// The encoded entries, each a complete field 3 of the envelope (tag, length, key and value).
    public private(set) var bytes: ArraySlice<UInt8>

    /// No metadata.
    public init() {
        bytes = []
    }

    /// The entries of `metadata`, in no particular order.
    public init(_ metadata: [String: String]) {
        var bytes: [UInt8] = []
        for (key, value) in metadata { Self.appendEntry(key: key, value: value, to: &bytes) }
        self.bytes = bytes[...]
    }

    /// Bytes known to hold only well-formed entries (the envelope decoder checked them).
    init(validatedBytes: ArraySlice<UInt8>) {
        bytes = validatedBytes
    }

    public var isEmpty: Bool { bytes.isEmpty }

    /// Adds an entry; when the key is already present, the receiver reads this later value.
    public mutating func append(key: String, value: String) {
        var owned = Array(bytes)
        owned.reserveCapacity(owned.count + 8 + key.utf8.count + value.utf8.count)
        Self.appendEntry(key: key, value: value, to: &owned)
        bytes = owned[...]
    }

    /// The entries whose key is not in `removed`, followed by `appended` (in that order), in one allocation.
    public func replacing(_ removed: MetadataKeys, with appended: [(key: String, value: String)]) -> EncodedMetadata {
        var capacity = bytes.count
        for (key, value) in appended { capacity += 12 + key.utf8.count + value.utf8.count }
        var output: [UInt8] = []
        output.reserveCapacity(capacity)
        var reader = ProtoWire.Reader(slice: bytes)
        while let (_, _, start) = try? reader.nextTag(), let entry = try? reader.readLengthDelimitedRange() {
            guard let key = Self.keyRange(in: bytes[entry]), !removed.contains(bytes[key]) else { continue }
            output.append(contentsOf: bytes[start..<entry.upperBound])
        }
        for (key, value) in appended { Self.appendEntry(key: key, value: value, to: &output) }
        return EncodedMetadata(validatedBytes: output[...])
    }

    /// The metadata as a dictionary (later entries win, as in protobuf maps).
    public var dictionary: [String: String] {
        var metadata: [String: String] = [:]
        var reader = ProtoWire.Reader(slice: bytes)
        while (try? reader.nextTag()) != nil, let entry = try? reader.readLengthDelimitedRange() {
            if let (key, value) = try? Self.decodeEntry(bytes[entry]) { metadata[key] = value }
        }
        return metadata
    }

    // MARK: - Entries

    static func entrySize(keyCount: Int, valueCount: Int) -> Int {
        (keyCount == 0 ? 0 : 1 + ProtoWire.varintSize(UInt64(keyCount)) + keyCount)
            + (valueCount == 0 ? 0 : 1 + ProtoWire.varintSize(UInt64(valueCount)) + valueCount)
    }

    static func appendEntry(key: String, value: String, to output: inout [UInt8]) {
        let entry = entrySize(keyCount: key.utf8.count, valueCount: value.utf8.count)
        output.append(3 << 3 | ProtoWire.WireType.lengthDelimited.rawValue)
        ProtoWire.appendVarint(UInt64(entry), to: &output)
        ProtoWire.appendString(key, field: 1, to: &output)
        ProtoWire.appendString(value, field: 2, to: &output)
    }

    /// The key and value of one map entry's content.
    static func decodeEntry(_ entry: ArraySlice<UInt8>) throws(EnvelopeError) -> (String, String) {
        var key = ""
        var value = ""
        var reader = ProtoWire.Reader(slice: entry)
        while let (field, wireType, _) = try reader.nextTag() {
            switch (field, wireType) {
            case (1, .lengthDelimited):
                let range = try reader.readLengthDelimitedRange()
                if let known = wellKnownKeys.first(where: { $0.bytes.elementsEqual(entry[range]) }) {
                    key = known.key
                } else {
                    key = try reader.string(in: range, field: "metadata key")
                }
            case (2, .lengthDelimited): value = try reader.readString(field: "metadata value")
            default: try reader.skip(wireType)
            }
        }
        return (key, value)
    }

    /// The keys services set on nearly every call, as their bytes and as one shared string each: longer than 15
    /// bytes, each would be a new heap string per call otherwise (every call the gateway forwards has four).
    private static let wellKnownKeys: [(bytes: [UInt8], key: String)] = [
        MetadataKey.callerUserID, MetadataKey.callerAppID, MetadataKey.callerScopes, MetadataKey.callerSessionID,
        MetadataKey.traceID, MetadataKey.idempotencyKey, MetadataKey.authorization,
    ].map { (Array($0.utf8), $0) }

    /// Where the key's bytes are in one entry's content (empty when the entry has no key field).
    private static func keyRange(in entry: ArraySlice<UInt8>) -> Range<Int>? {
        var reader = ProtoWire.Reader(slice: entry)
        var key = entry.startIndex..<entry.startIndex
        while let (field, wireType, _) = try? reader.nextTag() {
            if field == 1 && wireType == .lengthDelimited {
                guard let range = try? reader.readLengthDelimitedRange() else { return nil }
                key = range
            } else if (try? reader.skip(wireType)) == nil {
                return nil
            }
        }
        return key
    }
}

/// A set of metadata keys compared as UTF-8 bytes, so filtering encoded entries creates no strings.
public struct MetadataKeys: Sendable {
    private let keys: [[UInt8]]

    public init(_ keys: some Sequence<String>) {
        self.keys = keys.map { Array($0.utf8) }
    }

    func contains(_ key: ArraySlice<UInt8>) -> Bool {
        keys.contains { $0.elementsEqual(key) }
    }
}
