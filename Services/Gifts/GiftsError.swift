import RavePostgres
import RaveRPC
import RaveRuntime

/// Everything the gifts service refuses, with the status each becomes (the module's one error type).
struct GiftsError: StatusCodeError {
    var code: StatusCode
    var message: String

    static func unknownGiftType(_ key: String) -> Self { .notFound("no gift type \"\(key)\" in this application") }
}

/// The limits on request fields, checked in one place so every method words them alike.
enum RequestLimits {
    static let maximumRecipients = 20
    static let maximumInvitations = 50
    static let idempotencyKeyLengths = 1...128
    static let externalIDLengths = 1...256
    static let maximumChannelLength = 32
    /// 14 days, the default expiry after sending.
    static let defaultExpirySeconds: Int64 = 14 * 24 * 3600
    static let pageSizes = RequestRange("page_size", 1...100, zeroMeans: 25)

    /// Every numeric range with the message whose field it checks; the tests compare them with the proto comments.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.gifts.v1.ListGiftsRequest", pageSizes), ("rave.gifts.v1.ListGiftRequestsRequest", pageSizes),
        ("rave.gifts.v1.ListUserGiftsRequest", pageSizes),
    ]

    /// `size` 0 means the default; anything else must be 1…100.
    static func pageSize(_ size: UInt32) throws(GiftsError) -> Int {
        try pageSizes.check(size, orThrow: GiftsError.invalidArgument)
    }

    /// An id on the wire (a Rave ID, a gift's or a request's id): 32 lowercase hex digits, as every service reads
    /// them; another spelling (upper case, dashes) is refused.
    static func id(_ text: String, field: String) throws(GiftsError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }

    /// 1…20 recipients; more is refused before anything is looked up, so nothing is sent.
    static func recipients(_ texts: [String]) throws(GiftsError) -> [RaveID] {
        guard !texts.isEmpty else { throw .invalidArgument("recipient_ids must name at least one user") }
        guard texts.count <= maximumRecipients else {
            throw .invalidArgument(
                "recipient_ids may name at most \(maximumRecipients) users per call, got \(texts.count)")
        }
        var ids: [RaveID] = []
        ids.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            ids.append(try id(text, field: "recipient_ids[\(index)]"))
        }
        return ids
    }

    static func giftTypeKey(_ key: String, field: String = "gift_type_key") throws(GiftsError) -> String {
        guard (1...64).contains(key.utf8.count),
            key.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2E
                    || byte == 0x5F || byte == 0x2D
            })
        else {
            throw .invalidArgument("\(field) must be 1…64 letters, digits, '.', '_' or '-', got \"\(key.prefix(70))\"")
        }
        return key
    }

    static func externalID(_ text: String, field: String) throws(GiftsError) -> String {
        guard externalIDLengths.contains(text.utf8.count) else {
            throw .invalidArgument(
                "\(field) must be \(externalIDLengths.lowerBound)…\(externalIDLengths.upperBound) bytes, "
                    + "got \(text.utf8.count)")
        }
        return text
    }

    /// The idempotency key from the request field, else the "idempotency-key" metadata; nil when neither is set.
    static func idempotencyKey(_ field: String, context: RequestContext) throws(GiftsError) -> String? {
        let key = field.isEmpty ? (context.metadata[MetadataKey.idempotencyKey] ?? "") : field
        if key.isEmpty { return nil }
        guard idempotencyKeyLengths.contains(key.utf8.count) else {
            throw .invalidArgument(
                "idempotency_key must be \(idempotencyKeyLengths.lowerBound)…\(idempotencyKeyLengths.upperBound) "
                    + "bytes, got \(key.utf8.count)")
        }
        return key
    }
}
