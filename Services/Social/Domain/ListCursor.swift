import Foundation
import RaveMessages
import RavePostgres

/// Where the next page of a list query starts: the sort key of the last row shown.
///
/// Opaque to clients: base64url of "n|<sort name>|<peer id>" for display-name order and "r|<microseconds>|<peer id>"
/// for most-recent order. A cursor of the other order, or anything that does not decode, is INVALID_ARGUMENT.
enum ListCursor: Hashable, Sendable {
    case displayName(sortName: String, peerID: RaveID)
    case mostRecent(since: PostgresTimestamp, peerID: RaveID)

    var encoded: String {
        let plain: String
        switch self {
        case .displayName(let name, let peer): plain = "n|\(name)|\(peer.hex)"
        case .mostRecent(let since, let peer): plain = "r|\(since.microsecondsSinceEpoch)|\(peer.hex)"
        }
        return Data(plain.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a client's cursor for a query in `order`.
    init(decoding text: String, order: SocialV1.ListOrder) throws(SocialError) {
        let malformed = SocialError.invalidArgument(
            "cursor is malformed; pass next_cursor of a previous page unchanged")
        guard text.utf8.count <= 512 else { throw malformed }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let plain = String(data: data, encoding: .utf8) else {
            throw malformed
        }
        // The name may itself contain "|": the kind is the first field and the peer id the last.
        guard let first = plain.firstIndex(of: "|"), let last = plain.lastIndex(of: "|"), first < last,
            let peer = RaveID(plain[plain.index(after: last)...]), plain.distance(from: last, to: plain.endIndex) == 33
        else { throw malformed }
        let middle = String(plain[plain.index(after: first)..<last])
        switch (plain[..<first], order) {
        case ("n", .displayName):
            self = .displayName(sortName: middle, peerID: peer)
        case ("r", .mostRecent):
            guard let micros = Int64(middle) else { throw malformed }
            self = .mostRecent(since: PostgresTimestamp(microsecondsSinceEpoch: micros), peerID: peer)
        case ("n", _), ("r", _):
            throw .invalidArgument("cursor belongs to a query in another order")
        default:
            throw malformed
        }
    }
}

/// A validated list query: what the store runs.
struct PageRequest: Sendable {
    var order: SocialV1.ListOrder
    var offset: Int
    var limit: Int
    var cursor: ListCursor?
    /// Lower-cased display-name prefix; empty for none.
    var prefix: String

    init(_ query: SocialV1.ListQuery) throws(SocialError) {
        switch query.order {
        case .displayName, .mostRecent: order = query.order
        case .unrecognized(let value): throw .invalidArgument("order \(value) is not a known order")
        }
        limit = try RequestLimits.pageSize(query.limit)
        offset = try RequestLimits.offset(query.offset)
        guard query.prefix.count <= RequestLimits.maximumPrefixLength else {
            throw .invalidArgument(
                "prefix must be at most \(RequestLimits.maximumPrefixLength) characters, got \(query.prefix.count)")
        }
        prefix = query.prefix.lowercased()
        if query.cursor.isEmpty {
            cursor = nil
        } else {
            guard offset == 0 else { throw .invalidArgument("pass either offset or cursor, not both") }
            cursor = try ListCursor(decoding: query.cursor, order: order)
        }
    }

    /// A LIKE pattern matching names that start with `prefix`, with LIKE's wildcards escaped.
    var prefixPattern: String {
        var pattern = ""
        for character in prefix {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern + "%"
    }
}
