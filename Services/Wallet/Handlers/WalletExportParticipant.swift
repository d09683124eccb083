import RaveMerges
import RaveMessages
import RaveRPC
import RaveServices

/// `rave.export.v1.ExportParticipant`: identity's export job reads an account's money here, page by page.
final class WalletExportParticipant: ExportV1.ExportParticipantHandler {
    let dependencies: WalletDependencies

    init(dependencies: WalletDependencies) {
        self.dependencies = dependencies
    }

    /// One page of the user's and its merged ids' accounts, ledger rows, bets, server seeds and merges
    /// (docs/wallet.md, "Exporting an account"); changes nothing.
    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try await dependencies.merges.exportUser(request, sections: ExportStore.sections)
    }
}
