import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTransport

/// What account-export tests check: the participant served as identity calls it, and every page of an export read
/// and parsed.
public enum ExportChecks {
    /// Serves `participant` as identity calls it (`StandInPeers.servingToIdentityAndGateway`); `body` gets a client
    /// presenting identity's certificate and one presenting the gateway's.
    public static func serving(
        _ participant: some ExportV1.ExportParticipantHandler, as serviceName: String, group: EventLoopGroup,
        _ body: (_ identity: ExportV1.ExportParticipantClient, _ gateway: ExportV1.ExportParticipantClient)
            async throws -> Void
    ) async throws {
        try await StandInPeers.servingToIdentityAndGateway(participant, as: serviceName, group: group) {
            try await body(ExportV1.ExportParticipantClient(caller: $0), ExportV1.ExportParticipantClient(caller: $1))
        }
    }

    /// A whole export, read page by page.
    public struct Export: @unchecked Sendable {  // the parsed JSON objects are immutable values once read
        /// The records of each section, every page's appended in order, parsed.
        public var sections: [String: [[String: Any]]] = [:]
        /// The raw records, for checks of the exact bytes.
        public var raw: [String: [[UInt8]]] = [:]
        /// The section names in the order they first appeared.
        public var order: [String] = []
        public var pages = 0
        /// Every page's record count.
        public var pageSizes: [Int] = []
        /// Every page's record bytes.
        public var pageBytes: [Int] = []

        public func records(_ section: String) -> [[String: Any]] { sections[section] ?? [] }
    }

    /// Calls `page` from an empty cursor until `next_cursor` is empty (at most `maximumPages` pages); every record
    /// must parse as a JSON object.
    public static func export(
        _ request: ExportV1.ExportUserRequest, maximumPages: Int = 1000,
        page: (ExportV1.ExportUserRequest) async throws -> ExportV1.ExportUserResponse
    ) async throws -> Export {
        var export = Export()
        var request = request
        request.cursor = ""
        repeat {
            let response = try await page(request)
            export.pages += 1
            export.pageSizes.append(response.sections.reduce(0) { $0 + $1.records.count })
            export.pageBytes.append(response.sections.reduce(0) { $0 + $1.records.reduce(0) { $0 + $1.count } })
            for section in response.sections {
                if export.sections[section.name] == nil { export.order.append(section.name) }
                for record in section.records {
                    guard let object = try JSONSerialization.jsonObject(with: Data(record)) as? [String: Any] else {
                        throw ExportCheckError(message: "a record of \(section.name) is not a JSON object")
                    }
                    export.sections[section.name, default: []].append(object)
                    export.raw[section.name, default: []].append(record)
                }
            }
            request.cursor = response.nextCursor
            guard export.pages < maximumPages else {
                throw ExportCheckError(message: "more than \(maximumPages) pages")
            }
        } while !request.cursor.isEmpty
        return export
    }

    /// Requests every participant refuses with INVALID_ARGUMENT whatever its sections, for `user` (an id as the
    /// wire holds it): cursors no service writes, bad user and merged ids, export ids outside 1…128 bytes.
    public static func malformedRequests(user: String) -> [ExportV1.ExportUserRequest] {
        [
            .init(exportId: "e", userId: user, cursor: "garbage"),
            .init(exportId: "e", userId: user, cursor: "1.nosuchsection"),
            .init(exportId: "e", userId: user, cursor: "2.merges"),
            .init(exportId: "e", userId: user, cursor: "1.merges.!!!"),
            .init(exportId: "e", userId: user.uppercased()),
            .init(exportId: "e", userId: ""),
            .init(exportId: "e", userId: user, mergedUserIds: ["not-an-id"]),
            .init(exportId: "", userId: user),
            .init(exportId: String(repeating: "e", count: 129), userId: user),
        ]
    }

    /// A digest of every row of every table, to show that an export changed nothing (counts alone would miss an
    /// update).
    public static func contents(of database: some PostgresQueryable) async throws -> [String: String] {
        try await PublicTables.each(in: database) {
            "SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM \($0) t"
        }
    }

    /// True when `text` is a time as exports write it: "2026-12-02T03:45:00.123Z".
    public static func isTime(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        return text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil
    }

    /// True when `value` is an id as exports write it: 32 lowercase hex digits.
    public static func isID(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        return text.wholeMatch(of: /[0-9a-f]{32}/) != nil
    }
}

/// A check of an export that failed.
public struct ExportCheckError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
