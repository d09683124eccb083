import RavePostgres

/// Where a newest-first page ended: the last row's time and id, as an opaque token "<microseconds>.<id hex>".
struct PageCursor: Sendable, Hashable {
    var time: PostgresTimestamp
    var id: RaveID

    var token: String { "\(time.microsecondsSinceEpoch).\(id.hex)" }

    /// Nil for an empty token (the first page); INVALID_ARGUMENT for one this service did not issue.
    static func parse(_ token: String) throws(GiftsError) -> PageCursor? {
        guard !token.isEmpty else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let micros = Int64(parts[0]), parts[1].utf8.count == 32, let id = RaveID(parts[1])
        else {
            throw .invalidArgument("page_token is not a token this service returned; start again with an empty one")
        }
        return PageCursor(time: PostgresTimestamp(microsecondsSinceEpoch: micros), id: id)
    }
}
