import Foundation
import RaveCrypto
import RaveMessages
import RaveRPC
import RaveServices
import Testing

/// An operator account of one publisher, logged in through the gateway as the web console logs in, cannot change
/// another publisher's games: the gateway admits its token to the method (its role reaches it) and leaderboards
/// refuses the application of another publisher (docs/identity.md, "Publisher scope").
@Suite("Operator scope through the real gateway")
struct OperatorScopeStoryTests {
    static let password = "a long operator password"

    @Test("an operator of publisher B cannot define a leaderboard of publisher A's application")
    func anOperatorOfAnotherPublisherCannotDefineALeaderboard() async throws {
        try await SystemStack.with { stack in
            guard stack.ports["leaderboards"] != nil else { return }
            let appA = try await stack.makeApplication()
            let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
            let publisherA = try await identityAdmin.getApplication(.init(appId: appA)).application?.publisherId ?? ""
            let publisherB =
                try await identityAdmin.createPublisher(.init(name: "Studio B")).publisher?.publisherId ?? ""
            let appB =
                try await identityAdmin.createApplication(.init(publisherId: publisherB, name: "Game B"))
                .application?.appId ?? ""

            // Publisher B's content operator, enrolled and logged in with a TOTP code as the console does.
            let created = try await identityAdmin.createOperator(
                .init(email: "content@b.example", role: .operator, publisherId: publisherB, reason: "new hire"))
            let enrolled = try await stack.anonymousIdentity.operatorEnroll(
                .init(enrolmentCode: created.enrolmentCode, password: Self.password))
            let tokens = try await stack.anonymousIdentity.operatorLogin(
                .init(
                    email: "content@b.example", password: Self.password,
                    totpCode: try Self.totpCode(secret: enrolled.totpSecret)))
            let operatorOptions = CallOptions(
                timeout: .seconds(10),
                metadata: [
                    MetadataKey.authorization: "Bearer \(tokens.accessToken)", MetadataKey.reason: "season start",
                ], maxRetries: 0)
            let leaderboards = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.gateway)
            func board(_ app: String) -> LeaderboardsV1.DefineLeaderboardRequest {
                .init(appId: app, definition: .init(key: "weekly", name: "Weekly", active: true))
            }

            // Its own publisher's application: the token works.
            _ = try await leaderboards.defineLeaderboard(board(appB), options: operatorOptions)
            // Publisher A's: refused by leaderboards, and A's players see no board.
            do {
                _ = try await leaderboards.defineLeaderboard(board(appA), options: operatorOptions)
                Issue.record("an operator of publisher B defined a leaderboard of publisher A's application")
            } catch let error as RPCError {
                #expect(error.code == .permissionDenied)
                #expect(
                    error.message
                        == "this operator acts for publisher \(publisherB) only; application \(appA) belongs to "
                        + "publisher \(publisherA)")
            }
            let player = try await stack.guest(appID: appA)
            #expect(try await player.leaderboards.listLeaderboards(.init()).leaderboards.isEmpty)
        }
    }

    /// The current RFC 6238 code of a base32 `secret` (SHA-1, 6 digits, 30 s), as an authenticator app shows it.
    static func totpCode(secret: String) throws -> String {
        var key: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        for character in secret.uppercased() where character != "=" {
            guard let digit = alphabet.firstIndex(of: character) else {
                throw RPCError.invalidArgument("not base32: \(secret)")
            }
            buffer = buffer << 5 | UInt32(digit)
            bits += 5
            if bits >= 8 {
                bits -= 8
                key.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        let step = UInt64(Date().timeIntervalSince1970) / 30
        let counter = (0..<8).map { UInt8(truncatingIfNeeded: step >> UInt64(56 - 8 * $0)) }
        let mac = Digest.hmacSHA1(key: key, message: counter)
        let offset = Int(mac[19] & 0x0f)
        let value =
            (UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16
                | UInt32(mac[offset + 2]) << 8 | UInt32(mac[offset + 3])) % 1_000_000
        return String(format: "%06u", value)
    }
}
