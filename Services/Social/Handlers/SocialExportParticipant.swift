import RaveMerges
import RaveMessages
import RaveRPC
import RaveServices

/// `rave.export.v1.ExportParticipant`: identity's export job reads an account's graph here, page by page.
final class SocialExportParticipant: ExportV1.ExportParticipantHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    /// One page of the user's and its merged ids' relationships, requests, blocks, contacts and merges
    /// (docs/social.md, "Exporting an account"); changes nothing.
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try await dependencies.mergedUsers.exportUser(request, sections: ExportStore.sections)
    }
}
