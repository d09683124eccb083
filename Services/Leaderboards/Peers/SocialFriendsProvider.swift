import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// The production friends: social's `SocialInternal/FriendIds`, asked on every friends query.
///
/// Not cached: a friend added a moment ago should show on the next board the player opens, and one call per
/// friends query is cheap next to the ranking itself.
final class SocialFriendsProvider: FriendsProvider {
    private let client: SocialV1.SocialInternalClient
    private let timeout: Duration

    /// `caller` is an mTLS client carrying the leaderboards certificate, which social requires of internal calls.
    init(caller: any RPCCaller, timeout: Duration = .seconds(5)) {
        client = SocialV1.SocialInternalClient(caller: caller)
        self.timeout = timeout
    }

    func friendIDs(of userID: RaveID, appID: String) async throws -> [RaveID] {
        let response: SocialV1.FriendIdsResponse
        do {
            response = try await client.friendIds(
                .init(userId: userID.hex, appId: appID), options: CallOptions(timeout: timeout))
        } catch {
            // The player asked leaderboards, so the status says which dependency failed rather than passing
            // social's own message through.
            throw LeaderboardsError.unavailable("the social service did not answer the friends list: \(error)")
        }
        // Social only returns valid ids; one it could not format is skipped rather than failing the board.
        return response.userIds.compactMap { RaveID($0) }.filter { $0 != userID }
    }

    /// Never known without asking social (nothing is cached, see above).
    func knownFriendIDs(of userID: RaveID, appID: String) -> [RaveID]? { nil }
}
