import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// The gateway's admission rule, decided without sockets, tokens or clocks.
@Suite("Call admission")
struct CallAdmissionTests {
    let admission = CallAdmission(services: ["wallet": "wallet-pool", "identity": "identity-pool"], deadlineMargin: 20)
    let player = Caller(
        userID: "u1", appID: "a1", sessionID: "s1",
        scopes: [Caller.playerScope, Caller.adminScope, Caller.serviceScope])

    private func decide(
        _ method: String, role: PeerRole? = nil, token: CallToken, deadline: UInt64 = 1_000, now: UInt64 = 0
    ) throws -> Result<CallAdmission<String>.Admitted, RPCError> {
        admission.decide(
            method: method, route: try MethodRoute(method: method), role: role, token: token, deadline: deadline,
            now: now)
    }

    @Test func aPlayerCallNeedsAToken() throws {
        #expect(try MethodRoute(method: "rave.wallet.v1.Wallet/GetWallet").tokenNeed == .required)
        let refused = try decide("rave.wallet.v1.Wallet/GetWallet", token: .absent)
        #expect(refused.failure?.code == .unauthenticated)
        let expired = RPCError.unauthenticated("the access token has expired; refresh the session")
        #expect(try decide("rave.wallet.v1.Wallet/GetWallet", token: .rejected(expired)).failure == expired)
    }

    @Test func aPlayerIsForwardedWithoutScopesOnlyTheGatewayGrants() throws {
        let admitted = try decide("rave.wallet.v1.Wallet/GetWallet", token: .verified(player)).get()
        #expect(admitted.service == "wallet" && admitted.backend == "wallet-pool")
        #expect(admitted.caller?.scopes == [Caller.playerScope])
        #expect(admitted.chargedUser == "u1")
        #expect(admitted.backendDeadline == 980)
    }

    @Test func theAdminRoleAddsTheAdminScopeToAPlayerCall() throws {
        let admitted = try decide("rave.wallet.v1.Wallet/GetWallet", role: .admin, token: .verified(player)).get()
        #expect(admitted.caller?.scopes == [Caller.playerScope, Caller.adminScope])
    }

    @Test(arguments: [nil, PeerRole.client, .gateway, .service("wallet")])
    func adminMethodsNeedTheAdminRole(role: PeerRole?) throws {
        let refused = try decide("rave.wallet.v1.WalletAdmin/Deposit", role: role, token: .verified(player))
        #expect(refused.failure?.code == .permissionDenied)
    }

    @Test func anAdminWithoutATokenCallsAsNobodyWithTheAdminScope() throws {
        let admitted = try decide("rave.wallet.v1.WalletAdmin/Deposit", role: .admin, token: .absent).get()
        #expect(admitted.caller == Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
        #expect(admitted.chargedUser == nil)
        // An admin naming a player with a token acts for that player, charged to them; a bad token fails.
        let forPlayer = try decide("rave.wallet.v1.WalletAdmin/Deposit", role: .admin, token: .verified(player)).get()
        #expect(forPlayer.caller?.userID == "u1" && forPlayer.chargedUser == "u1")
        let invalid = RPCError.unauthenticated("the access token is invalid")
        #expect(
            try decide("rave.wallet.v1.WalletAdmin/Deposit", role: .admin, token: .rejected(invalid)).failure == invalid
        )
    }

    @Test func aLoginUsesAValidTokenAndIgnoresAnInvalidOne() throws {
        let login = "rave.identity.v1.Identity/RefreshSession"
        #expect(try MethodRoute(method: login).tokenNeed == .optional)
        #expect(try decide(login, token: .verified(player)).get().caller?.userID == "u1")
        let expired = RPCError.unauthenticated("expired")
        #expect(try decide(login, token: .rejected(expired)).get().caller == nil)
        #expect(try decide(login, token: .absent).get().caller == nil)
    }

    @Test func anonymousMethodsIgnoreTokens() throws {
        let method = "rave.gifts.v1.GiftsInstall/ResolveInstallLink"
        #expect(try MethodRoute(method: method).tokenNeed == .none)
        let admission = CallAdmission(services: ["gifts": "gifts-pool"], deadlineMargin: 0)
        let admitted = try admission.decide(
            method: method, route: MethodRoute(method: method), role: nil, token: .verified(player), deadline: 5,
            now: 0
        ).get()
        #expect(admitted.caller == nil && admitted.chargedUser == nil)
    }

    @Test func aServiceWithoutBackendsIsUnimplemented() throws {
        let refused = try decide("rave.social.v1.Social/QueryFriends", token: .verified(player))
        #expect(refused.failure?.code == .unimplemented)
    }

    @Test func tooLittleTimeLeftIsDeadlineExceeded() throws {
        // The margin is 20 ns: at 980 of a 1,000 deadline nothing is left for the service.
        let refused = try decide("rave.wallet.v1.Wallet/GetWallet", token: .verified(player), now: 980)
        #expect(refused.failure?.code == .deadlineExceeded)
        #expect(
            try decide("rave.wallet.v1.Wallet/GetWallet", token: .verified(player), now: 979).get().service == "wallet")
    }

    @Test func theCredentialIsCheckedBeforeTheBackendAndTheTime() throws {
        // A call that fails several rules gets the credential's refusal: it says what the caller must change.
        let refused = try decide("rave.social.v1.Social/QueryFriends", token: .absent, now: 2_000)
        #expect(refused.failure?.code == .unauthenticated)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
