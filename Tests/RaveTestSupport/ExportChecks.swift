import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import RaveTransport

/// What account-export tests check: the participant served as identity calls it, and every page of an export read
/// and parsed.
public enum ExportChecks {
    /// Serves `participant` over mutual TLS as a service presenting `serviceName`'s certificate, with the trust
    /// model every backend applies; `body` gets a client presenting identity's certificate (the one caller the
    /// trust model allows) and one presenting the gateway's.
    public static func serving(
        _ participant: some ExportV1.ExportParticipantHandler, as serviceName: String, group: EventLoopGroup,
        _ body: (_ identity: ExportV1.ExportParticipantClient, _ gateway: ExportV1.ExportParticipantClient)
            async throws -> Void
    ) async throws {
        let asIdentity = try StandInPeers([participant], serverName: serviceName, clientName: "identity", group: group)
        let asGateway: StandInPeers
        do {
            asGateway = try StandInPeers([participant], serverName: serviceName, clientName: "gateway", group: group)
        } catch {
            await asIdentity.shutdown()
            throw error
        }
        do {
            try await body(
                ExportV1.ExportParticipantClient(caller: asIdentity.client),
                ExportV1.ExportParticipantClient(caller: asGateway.client))
        } catch {
            await asGateway.shutdown()
            await asIdentity.shutdown()
            throw error
        }
        await asGateway.shutdown()
        await asIdentity.shutdown()
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
