import RaveMerges
import RaveMessages
import RaveRPC
import RaveServices

/// `rave.export.v1.ExportParticipant`: identity's export job reads an account's scores here, page by page.
final class LeaderboardsExportParticipant: ExportV1.ExportParticipantHandler {
    let dependencies: LeaderboardsDependencies

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
    }

    /// One page of the user's and its merged ids' scores on every board and version, achievements and merges
    /// (docs/leaderboards.md, "Exporting an account"), read from the table (every board, owned here or not);
    /// changes nothing.
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try await dependencies.engine.merges.exportUser(request, sections: ExportStore.sections)
    }
}
