import RaveMerges
import RaveMessages
import RaveRPC
import RaveServices

/// `rave.export.v1.ExportParticipant`: identity's export job reads an account's gifts here, page by page.
final class GiftsExportParticipant: ExportV1.ExportParticipantHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    /// One page of the user's and its merged ids' gifts sent and received, requests, invitations, links, daily counts, idempotency records and merges
    /// (docs/gifts.md, "Exporting an account"); changes nothing.
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try await dependencies.mergedUsers.exportUser(request, sections: ExportStore.sections)
    }
}
