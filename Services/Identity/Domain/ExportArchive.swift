import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// The archive of an account export (docs/identity.md, "Exporting an account"), one JSON document.
///
///     {"format": "rave.export.v1", "export_id": …, "user_id": …, "merged_user_ids": […], "created_at": …,
///      "services": {"identity": {"<section>": [records…], …}, "<participant>": {…}, …}}
///
/// Records are embedded verbatim: identity's are built by PostgreSQL, a participant's are checked to be JSON
/// objects first, so one bad record fails the attempt instead of the archive.
struct ExportArchive: Sendable {
    /// One service's sections, in the order they first appeared, each with its records in page order.
    struct Sections: Sendable {
        private(set) var names: [String] = []
        private(set) var records: [String: [[UInt8]]] = [:]

        /// Appends `records` to `name`'s section.
        mutating func append(_ name: String, records more: [[UInt8]]) {
            if records[name] == nil {
                names.append(name)
                records[name] = []
            }
            records[name, default: []].append(contentsOf: more)
        }

        /// Appends one participant page, after checking its section names and that every record is a JSON object.
        mutating func append(page: [ExportV1.ExportSection], participant: String) throws(IdentityError) {
            for section in page {
                guard ExportArchive.isSectionName(section.name) else {
                    throw .unavailable(
                        "participant \(participant) sent a section named \(Validation.quoted(section.name)); "
                            + "names are lowercase snake case of at most 64 characters")
                }
                for (index, record) in section.records.enumerated() where !ExportArchive.isJSONObject(record) {
                    throw .unavailable(
                        "participant \(participant) sent record \(index) of section \(section.name) that is not a "
                            + "JSON object")
                }
                append(section.name, records: section.records)
            }
        }

        var byteCount: Int { records.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count + 1 } } }
    }

    let exportID: RaveID
    let userID: RaveID
    let mergedUserIDs: [RaveID]
    let createdAt: Date
    private(set) var services: [(name: String, sections: Sections)] = []

    init(exportID: RaveID, userID: RaveID, mergedUserIDs: [RaveID], createdAt: Date) {
        self.exportID = exportID
        self.userID = userID
        self.mergedUserIDs = mergedUserIDs
        self.createdAt = createdAt
    }

    mutating func add(service: String, _ sections: Sections) {
        services.append((service, sections))
    }

    /// The archive's bytes (UTF-8 JSON).
    func bytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(services.reduce(512) { $0 + $1.sections.byteCount + 64 })
        func text(_ string: String) { out.append(contentsOf: string.utf8) }
        text("{\"format\":\"rave.export.v1\",\"export_id\":\"\(exportID.hex)\",\"user_id\":\"\(userID.hex)\",")
        text("\"merged_user_ids\":[\(mergedUserIDs.map { "\"\($0.hex)\"" }.joined(separator: ","))],")
        text("\"created_at\":\"\(Self.timestamp(createdAt))\",\"services\":{")
        for (serviceIndex, service) in services.enumerated() {
            if serviceIndex > 0 { text(",") }
            text("\"\(service.name)\":{")
            for (sectionIndex, name) in service.sections.names.enumerated() {
                if sectionIndex > 0 { text(",") }
                text("\"\(name)\":[")
                for (index, record) in (service.sections.records[name] ?? []).enumerated() {
                    if index > 0 { text(",") }
                    out.append(contentsOf: record)
                }
                text("]")
            }
            text("}")
        }
        text("}}")
        return out
    }

    /// Lowercase snake case, 1…64 characters: safe as a JSON key without escaping.
    static func isSectionName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            name.utf8.count <= 64
        else { return false }
        return name.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }

    static func isJSONObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
    }

    /// RFC 3339 UTC with milliseconds, as every record spells times.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
