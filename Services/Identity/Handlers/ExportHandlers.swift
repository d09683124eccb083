import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// A player exporting their account's data (docs/identity.md, "Exporting an account").
extension PlayerHandlers {
    /// Re-authenticates the caller (as DeleteAccount does) and answers the export in progress or starts one.
    func requestAccountExport(
        _ request: IdentityV1.RequestAccountExportRequest, context: RequestContext
    ) async throws -> IdentityV1.RequestAccountExportResponse {
        let (userID, appID) = try await dependencies.player(context)
        _ = try IdentityMail.languages(request.language)
        let policy = dependencies.configuration.exports
        let now = dependencies.clock()
        let language = request.language
        let requested = try await reauthenticated(
            userID: userID, currentPassword: request.currentPassword, twoFactorCode: request.twoFactorCode,
            purpose: "export this account's data", context: context
        ) { transaction in
            try await AccountExports.request(
                userID: userID, by: .player, appID: appID, language: language, policy: policy, now: now,
                in: transaction)
        }
        return IdentityV1.RequestAccountExportResponse(
            accountExport: requested.export.message, created: requested.created)
    }

    func getAccountExport(
        _ request: IdentityV1.GetAccountExportRequest, context: RequestContext
    ) async throws -> IdentityV1.GetAccountExportResponse {
        let (userID, _) = try await dependencies.player(context)
        return IdentityV1.GetAccountExportResponse(
            accountExport: try await AccountExportAccess(pool: dependencies.pool).find(
                request.exportId, owner: userID)?.message)
    }

    func downloadAccountExport(
        _ request: IdentityV1.DownloadAccountExportRequest, context: RequestContext
    ) async throws -> IdentityV1.DownloadAccountExportResponse {
        let (userID, _) = try await dependencies.player(context)
        return try await AccountExportAccess(pool: dependencies.pool).download(
            request.exportId, owner: userID, offset: request.offset)
    }
}

/// Operators asking for a player's export and handing it over; only players of the operator's publisher.
extension AdminHandlers {
    func requestUserExport(
        _ request: IdentityV1.RequestUserExportRequest, context: RequestContext
    ) async throws -> IdentityV1.RequestAccountExportResponse {
        let actor = try await dependencies.admin(context)
        let account = try await exportedUser(request.userId, actor: actor)
        _ = try IdentityMail.languages(request.language)
        let policy = dependencies.configuration.exports
        let now = dependencies.clock()
        let requested = try await dependencies.pool.transaction { transaction in
            try await AccountExports.request(
                userID: account, by: .operator, appID: nil, language: request.language, policy: policy, now: now,
                in: transaction)
        }
        return IdentityV1.RequestAccountExportResponse(
            accountExport: requested.export.message, created: requested.created)
    }

    func getUserExport(
        _ request: IdentityV1.GetUserExportRequest, context: RequestContext
    ) async throws -> IdentityV1.GetAccountExportResponse {
        let account = try await exportedUser(request.userId, actor: try await dependencies.admin(context))
        return IdentityV1.GetAccountExportResponse(
            accountExport: try await AccountExportAccess(pool: dependencies.pool).find(
                request.exportId, owner: account)?.message)
    }

    func downloadUserExport(
        _ request: IdentityV1.DownloadUserExportRequest, context: RequestContext
    ) async throws -> IdentityV1.DownloadAccountExportResponse {
        let account = try await exportedUser(request.userId, actor: try await dependencies.admin(context))
        return try await AccountExportAccess(pool: dependencies.pool).download(
            request.exportId, owner: account, offset: request.offset)
    }

    /// The account `text` names (a merged-away id: its target), within the operator's publisher: a player who
    /// never played an application of it is NOT_FOUND, as an unknown one.
    private func exportedUser(_ text: String, actor: AdminActor) async throws -> RaveID {
        let requested = try Validation.raveID(text, field: "user_id")
        guard let account = try await UserStore(database: dependencies.pool).canonicalIDs([requested])[requested]
        else { throw IdentityError.notFound("no user \(requested.hex)") }
        if let scoped = actor.grant?.publisherID.flatMap({ RaveID(wire: $0) }),
            try await !AccountExportStore(database: dependencies.pool).playedPublisher(
                userID: account, publisherID: scoped)
        {
            throw IdentityError.notFound("no user \(requested.hex)")
        }
        return account
    }
}

/// Reading an export for its owner: another user's export, and an unknown one, are NOT_FOUND alike.
struct AccountExportAccess: Sendable {
    let pool: PostgresPool

    /// The export `text` names, or with an empty `text` the owner's latest (nil when there is none).
    func find(_ text: String, owner: RaveID) async throws -> AccountExportRecord? {
        let store = AccountExportStore(database: pool)
        guard !text.isEmpty else { return try await store.latest(userID: owner) }
        let id = try Validation.raveID(text, field: "export_id")
        guard let found = try await store.export(id), found.userID == owner else {
            throw IdentityError.notFound("no export \(id.hex)")
        }
        return found
    }

    /// Up to 1 MiB of a ready archive from `offset` (to the end of the piece holding it).
    func download(
        _ text: String, owner: RaveID, offset: Int64
    ) async throws -> IdentityV1.DownloadAccountExportResponse {
        guard !text.isEmpty else { throw IdentityError.invalidArgument("export_id is required") }
        guard let export = try await find(text, owner: owner) else {
            throw IdentityError.notFound("no export \(text)")
        }
        guard export.status == .ready else {
            let state =
                switch export.status {
                case .pending: "is still being assembled"
                case .failed: "failed: \(export.message.error)"
                default: "has expired and was deleted; ask for a new one"
                }
            throw IdentityError.failedPrecondition("export \(export.id.hex) \(state)")
        }
        guard (0...export.sizeBytes).contains(offset) else {
            throw IdentityError.invalidArgument("offset must be 0…\(export.sizeBytes), got \(offset)")
        }
        var chunk: [UInt8] = []
        if offset < export.sizeBytes {
            guard let piece = try await AccountExportStore(database: pool).chunk(exportID: export.id, holding: offset)
            else {
                // Expired between the two reads.
                throw IdentityError.failedPrecondition(
                    "export \(export.id.hex) has expired and was deleted; ask for a new one")
            }
            chunk = Array(piece.data[Int(offset - piece.start)...])
        }
        return IdentityV1.DownloadAccountExportResponse(
            chunk: chunk, totalSize: export.sizeBytes, sha256: export.message.sha256)
    }
}
