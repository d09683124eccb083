import RaveMerges
import RaveMessages
import RaveRPC
import RaveServices

/// `rave.export.v1.ExportParticipant`: identity's export job reads an account's devices and notifications here, page by page.
final class PushExportParticipant: ExportV1.ExportParticipantHandler {
    let dependencies: PushDependencies

    init(dependencies: PushDependencies) {
        self.dependencies = dependencies
    }

    /// One page of the user's and its merged ids' device tokens, deliveries, inbox entries and merges
    /// (docs/push.md, "Exporting an account"); changes nothing.
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try await dependencies.merges.exportUser(request, sections: ExportStore.sections)
    }
}
