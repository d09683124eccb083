import RaveMessages
import RaveRPC
import RaveServices

/// `rave.leaderboards.v1.LeaderboardsInternal`: the board owners, for the gateway's routing by board key.
final class InternalHandlers: LeaderboardsV1.LeaderboardsInternalHandler {
    let dependencies: LeaderboardsDependencies

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
    }

    /// Every unexpired lease, from the table, so any instance answers for all of them.
    func listBoardOwners(
        _ request: LeaderboardsV1.ListBoardOwnersRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ListBoardOwnersResponse {
        return LeaderboardsV1.ListBoardOwnersResponse(
            owners: try await dependencies.ownership.owners().map { lease in
                LeaderboardsV1.BoardOwner(
                    appId: lease.appID, leaderboardKey: lease.key, address: lease.ownerAddress,
                    expiresUnixMs: lease.expiresUnixMilliseconds)
            })
    }
}
