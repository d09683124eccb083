import Foundation
import RaveMessages
import RaveRPC
import RaveServices

/// The seed betting SDK's unbacked token: an access token that allows play with the betting math only.
extension PlayerHandlers {
    /// The scope the wallet refuses for every bet that moves money (Services/Wallet's `unbackedOnlyScope`).
    static let unbackedOnlyScope = "wallet:unbacked"

    func issueUnbackedToken(
        _ request: IdentityV1.IssueUnbackedTokenRequest, context: RequestContext
    ) async throws -> IdentityV1.IssueUnbackedTokenResponse {
        let (userID, appID) = try await dependencies.player(context)
        let sessionID = try Validation.raveID(try context.requireUser().sessionID, field: "caller session id")
        // No account-state scope: whatever the account may do elsewhere, this token only plays without money.
        let issued = try dependencies.signer.issue(
            subject: userID.hex, applicationID: appID.hex, sessionID: sessionID.hex,
            scopes: [Caller.playerScope, Self.unbackedOnlyScope],
            lifetime: dependencies.configuration.accessTokenLifetime)
        return IdentityV1.IssueUnbackedTokenResponse(
            accessToken: issued.token, accessTokenExpiresAtUnixMs: issued.claims.expiresAt * 1000, userId: userID.hex)
    }
}
