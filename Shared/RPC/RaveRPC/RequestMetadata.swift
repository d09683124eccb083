import Synchronization

/// A request's metadata as `RequestContext.metadata` hands it out: entries a server received stay in their wire
/// form until a handler first reads the dictionary, which is then decoded once and kept.
///
/// Most calls are never asked for their metadata: the server reads the caller's entries straight from the bytes
/// (`EnvelopeCodec.scanMetadata`), so the dictionary, its key strings and its value strings are made only for
/// the handlers that look. Shared by every copy of a context (and by the calls of a connection that carry the
/// same entries); the decoded dictionary is a pure function of the bytes, so sharing it is safe.
final class RequestMetadata: Sendable {
    /// The entries as they arrived (or as given).
    let encoded: EncodedMetadata
    private let decoded: Mutex<[String: String]?>

    /// Entries `EnvelopeCodec.scanMetadata` accepted, decoded when first read.
    convenience init(validated encoded: EncodedMetadata) {
        self.init(encoded: encoded, decoded: nil)
    }

    /// Metadata given as a dictionary, and as entries to pass on (which may differ: a context built by hand sets
    /// each on its own); nil when both are empty.
    convenience init?(dictionary: [String: String], encoded: EncodedMetadata) {
        guard !dictionary.isEmpty || !encoded.isEmpty else { return nil }
        self.init(encoded: encoded, decoded: dictionary)
    }

    private init(encoded: EncodedMetadata, decoded: [String: String]?) {
        self.encoded = encoded
        self.decoded = Mutex(decoded)
    }

    /// The metadata as a dictionary (a later entry wins, as in protobuf maps).
    var dictionary: [String: String] {
        decoded.withLock { decoded in
            if let decoded { return decoded }
            let dictionary = encoded.dictionary
            decoded = dictionary
            return dictionary
        }
    }
}

/// What the server needs from a request's metadata entries, read from their bytes: whether they assert a caller,
/// and the caller's entries.
struct CallerMetadata: Equatable {
    /// Whether any entry's key is one only the gateway may send (`MetadataKey.callerAssertions`).
    var assertsCaller = false
    var userID: String?
    var appID: String?
    var sessionID: String?
    var scopes: String?
}
