import Foundation
import RaveCrypto
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gateway
@testable import Identity

/// The front door's download of an account export (docs/gateway.md, "Downloading an account export"): a `GET` with
/// the player's token joins identity's chunks into one JSON attachment whose ETag is its SHA-256; failures keep the
/// front door's error shape.
@Suite("Gateway export download", .timeLimit(.minutes(3)))
struct GatewayExportDownloadTests {
    /// Both routes are in the OpenAPI document with the credential of the method whose chunks they join.
    @Test func theDownloadRoutesAreDocumented() throws {
        let root = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any]
        let paths = root?["paths"] as? [String: [String: Any]] ?? [:]
        let player = paths["/v1/account/exports/{export_id}/archive"]?["get"] as? [String: Any]
        #expect(player?["x-rave-method"] as? String == HTTPFrontDoor.playerDownloadMethod)
        #expect((player?["security"] as? [[String: Any]])?.map { $0.keys.sorted() } == [["bearerAuth"]])
        let admin = paths["/v1/admin/users/{user_id}/exports/{export_id}/archive"]?["get"] as? [String: Any]
        #expect(admin?["x-rave-method"] as? String == HTTPFrontDoor.operatorDownloadMethod)
        #expect(
            (admin?["security"] as? [[String: Any]])?.map { $0.keys.sorted() } == [["mutualTLS"], ["operatorAuth"]])
    }

    @Test func aPlayerDownloadsTheirArchiveInOneResponseAcrossChunks() async throws {
        // A participant whose one page is larger than a chunk, so the archive spans two.
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-dl-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "social"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let server = RPCServer(
            services: [LargeExporter()], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/social.pem",
                    privateKeyPath: "\(certificates)/social-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: group, logger: Logger(label: "participant", level: .critical))
        try server.start()
        let client = RPCClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/identity.pem",
                    privateKeyPath: "\(certificates)/identity-key.pem")),
            group: group, logger: Logger(label: "export-client", level: .critical))

        try await GatewayHTTPIdentityTests.with { stack in
            let connection = try await stack.http()
            defer { connection.close() }
            let login = try await connection.post(
                "/v1/rave.identity.v1.Identity/GuestLogin",
                json: #"{"appId": "\#(stack.appID)", "device": {"deviceId": "export-1"}}"#)
            let token = try #require((login.json?["tokens"] as? [String: Any])?["accessToken"] as? String)
            let bearer = ["Authorization": "Bearer \(token)"]
            let userID = try #require(
                ((login.json?["user"] as? [String: Any])?["profile"] as? [String: Any])?["userId"] as? String)
            // A guest re-authenticates with its fresh login.
            let requested = try await connection.post(
                "/v1/rave.identity.v1.Identity/RequestAccountExport", json: "{}", headers: bearer)
            #expect(requested.status == 200, "\(requested.text)")
            let exportID = try #require(
                (requested.json?["accountExport"] as? [String: Any])?["exportId"] as? String)

            let pending = try await connection.request(
                "GET", "/v1/account/exports/\(exportID)/archive", headers: bearer)
            #expect(pending.status == 400, "\(pending.text)")
            #expect(pending.json?["status"] as? String == "FAILED_PRECONDITION")

            let worker = AccountExportWorker(
                pool: stack.identity.context.pool,
                participants: [AccountExportWorker.Participant(name: "social", caller: client)],
                policy: AccountExportPolicy(), secrets: try SecretKeyFile.ring(),
                logger: Logger(label: "export", level: .critical))
            #expect(try await worker.runOnce() == 1)

            let archive = try await connection.request(
                "GET", "/v1/account/exports/\(exportID)/archive", headers: bearer)
            #expect(archive.status == 200, "\(archive.text.prefix(300))")
            #expect(archive.header("content-type") == "application/json")
            #expect(
                archive.header("content-disposition") == "attachment; filename=\"rave-export-\(exportID).json\"")
            #expect(archive.body.count > 1 << 20)
            let digest = AccountExportStore.hex(Digest.sha256(archive.body))
            #expect(archive.header("etag") == "\"\(digest)\"")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(archive.body)) as? [String: Any])
            #expect(document["user_id"] as? String == userID)
            let social = (document["services"] as? [String: Any])?["social"] as? [String: [[String: Any]]]
            #expect(social?["big"]?.count == 1)

            // Errors keep the front door's shape: an unknown id, no token, a wrong method.
            let unknown = try await connection.request(
                "GET", "/v1/account/exports/\(String(repeating: "0", count: 32))/archive", headers: bearer)
            #expect(unknown.status == 404)
            #expect(unknown.json?["status"] as? String == "NOT_FOUND")
            let anonymous = try await connection.request("GET", "/v1/account/exports/\(exportID)/archive")
            #expect(anonymous.status == 401)
            #expect(anonymous.json?["code"] as? Int == 16)
            let posted = try await connection.post(
                "/v1/account/exports/\(exportID)/archive", json: "{}", headers: bearer)
            #expect(posted.status == 405)
            #expect(posted.header("allow") == "GET, OPTIONS")
        }
        client.close()
        await server.shutdown()
    }
}

/// An export participant answering one page with one record of 1.2 MB.
final class LargeExporter: ExportV1.ExportParticipantHandler {
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        let record = "{\"pad\":\"\(String(repeating: "y", count: 1_200_000))\"}"
        return ExportV1.ExportUserResponse(sections: [
            ExportV1.ExportSection(name: "big", records: [Array(record.utf8)])
        ])
    }
}
