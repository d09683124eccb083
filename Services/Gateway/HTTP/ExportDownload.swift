import Foundation
import RaveHTTP
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// A download of an account export's archive (docs/gateway.md, "Downloading an account export"): a `GET` the front
/// door answers by calling identity's download method chunk by chunk through the pipeline, as single calls.
struct FrontDoorDownload: Sendable, Equatable {
    /// `rave.identity.v1.Identity/DownloadAccountExport` (a player's own) or
    /// `rave.identity.v1.IdentityAdmin/DownloadUserExport` (an operator's, for `userID`).
    var method: String
    var exportID: String
    var userID: String?
    /// `authorization`, `trace-id` and, for an operator, `rave-reason`.
    var metadata: [String: String]
    /// Nanoseconds each chunk's call may take.
    var timeout: UInt64
    var requestID: String
    var headers: [HTTPHeader]
}

extension HTTPFrontDoor {
    static let playerDownloadMethod = "rave.identity.v1.Identity/DownloadAccountExport"
    static let operatorDownloadMethod = "rave.identity.v1.IdentityAdmin/DownloadUserExport"
    /// The largest archive the front door assembles for one response (identity builds none larger).
    static let maximumArchiveBytes: Int64 = 256 << 20

    /// The download `path` names — `/v1/account/exports/{export_id}/archive` (the player's own, by bearer token)
    /// or `/v1/admin/users/{user_id}/exports/{export_id}/archive` (an operator's) — or nil for any other path.
    func exportDownload(
        _ request: HTTPServerRequest, path: Substring, requestID: String, headers: [HTTPHeader]
    ) -> Decision? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let method: String
        let userID: String?
        let exportID: String
        if parts.count == 6, parts[0...3] == ["", "v1", "account", "exports"], parts[5] == "archive" {
            (method, userID, exportID) = (Self.playerDownloadMethod, nil, parts[4])
        } else if parts.count == 8, parts[0...3] == ["", "v1", "admin", "users"], parts[5] == "exports",
            parts[7] == "archive"
        {
            (method, userID, exportID) = (Self.operatorDownloadMethod, parts[4], parts[6])
        } else {
            return nil
        }
        switch request.method {
        case "GET": break
        case "OPTIONS": return .respond(Self.options(allow: "GET, OPTIONS", headers: headers))
        default: return .respond(Self.methodNotAllowed(request.method, allow: "GET, OPTIONS", headers: headers))
        }
        let timeout: UInt64
        switch Self.timeout(request.header("x-rave-timeout-ms"), settings: settings) {
        case .success(let nanoseconds): timeout = nanoseconds
        case .failure(let error): return .respond(Self.failure(error, headers: headers))
        }
        var metadata = [MetadataKey.traceID: requestID]
        if let authorization = request.header("authorization") { metadata[MetadataKey.authorization] = authorization }
        if let reason = request.header("x-rave-reason") { metadata[MetadataKey.reason] = reason }
        return .download(
            FrontDoorDownload(
                method: method, exportID: exportID, userID: userID, metadata: metadata, timeout: timeout,
                requestID: requestID, headers: headers))
    }
}

extension FrontDoorCaller {
    /// The whole archive as one `application/json` attachment, its SHA-256 as the ETag; the first failing chunk's
    /// status in the front door's error shape otherwise.
    func download(_ download: FrontDoorDownload, peer: PeerIdentity) async -> HTTPServerResponse {
        var archive: [UInt8] = []
        var sha256 = ""
        do {
            while true {
                let context = RequestContext(
                    requestID: download.requestID, method: download.method,
                    deadline: monotonicNanoseconds() &+ download.timeout, metadata: download.metadata, peer: peer,
                    caller: nil, connectionLogger: logger)
                let request: [UInt8] =
                    if let userID = download.userID {
                        IdentityV1.DownloadUserExportRequest(
                            userId: userID, exportId: download.exportID, offset: Int64(archive.count)
                        ).protobufBytes()
                    } else {
                        IdentityV1.DownloadAccountExportRequest(
                            exportId: download.exportID, offset: Int64(archive.count)
                        ).protobufBytes()
                    }
                let answer = try IdentityV1.DownloadAccountExportResponse(
                    protobufBytes: try await pipeline.proxy(request: request, context: context))
                guard answer.totalSize <= HTTPFrontDoor.maximumArchiveBytes else {
                    throw RPCError.resourceExhausted(
                        "the archive is larger than the front door serves (\(HTTPFrontDoor.maximumArchiveBytes) bytes)")
                }
                guard sha256.isEmpty || sha256 == answer.sha256 else {
                    throw RPCError(.aborted, "the export changed during the download; download it again")
                }
                sha256 = answer.sha256
                archive += answer.chunk
                if Int64(archive.count) >= answer.totalSize || answer.chunk.isEmpty { break }
            }
        } catch {
            let error = RPCError(mapping: error, requestID: download.requestID)
            logger.info(
                "http download finished",
                [
                    ("method", download.method), ("status", "\(error.code)"), ("request_id", download.requestID),
                ])
            return HTTPFrontDoor.failure(error, headers: download.headers)
        }
        logger.info(
            "http download finished",
            [
                ("method", download.method), ("status", "ok"), ("bytes", String(archive.count)),
                ("request_id", download.requestID),
            ])
        // The export id was checked by identity (32 hex digits), so it is safe in a header.
        return HTTPServerResponse(
            status: .ok,
            headers: download.headers + [
                HTTPHeader(name: "Content-Type", value: BodyEncoding.json.contentType),
                HTTPHeader(
                    name: "Content-Disposition", value: "attachment; filename=\"rave-export-\(download.exportID).json\""
                ),
                HTTPHeader(name: "ETag", value: "\"\(sha256)\""),
            ],
            body: archive)
    }
}
