/// Who may call a method of Proto/ through the gateway: the one rule, read by the gateway to admit calls
/// (`MethodRoute`) and by `rave-protogen` to write each operation's security into docs/openapi.json.
///
/// It depends on the method's name alone: `<Area>Admin` services need the admin credential (the certificate, or an
/// operator's token whose role `AdminRoles` allows), `<Area>Internal`
/// services and the packages of `internalAreas` are for services only, identity's login methods
/// need no token, gifts' install service serves clients without an account, and everything else needs a player's
/// access token.
public enum MethodAccess: String, Sendable, Hashable, CaseIterable {
    /// Signs a player in: no token needed (GuestLogin, SignUp, …); a valid one is passed on when present.
    case login
    /// Serves clients that have no account yet (a fresh install following a link): no token needed.
    case anonymous
    /// Needs a valid access token.
    case player
    /// Needs the admin client certificate or an operator's access token of a role `AdminRoles` allows.
    case admin

    /// Identity methods that create or renew a session, or recover an account whose password is lost (the player has
    /// no session then), so cannot require one.
    public static let loginMethods: Set<String> = [
        "rave.identity.v1.Identity/GuestLogin", "rave.identity.v1.Identity/SignUp",
        "rave.identity.v1.Identity/LoginWithPassword", "rave.identity.v1.Identity/LoginWithProvider",
        "rave.identity.v1.Identity/CompleteTwoFactorLogin", "rave.identity.v1.Identity/RefreshSession",
        "rave.identity.v1.Identity/RequestPasswordReset", "rave.identity.v1.Identity/ResetPassword",
        // Operator accounts enrol, log in, refresh and log out without a player's token.
        "rave.identity.v1.Identity/OperatorEnroll", "rave.identity.v1.Identity/OperatorLogin",
        "rave.identity.v1.Identity/OperatorRefresh", "rave.identity.v1.Identity/OperatorLogout",
    ]

    /// Packages whose every service is a contract between services: the merge, deletion and export participants and
    /// the event sinks.
    public static let internalAreas: Set<Substring> = ["merge", "erasure", "export", "events"]

    /// Services whose every method is for clients without an account (gifts' install links).
    public static let anonymousServices: Set<Substring> = ["rave.gifts.v1.GiftsInstall"]

    /// The access of `method`, a well-formed name `rave.<area>.v1.<Service>/<Method>`; nil when the method is
    /// internal to the backend (saga participants, event sinks, `<Area>Internal` services), which the gateway
    /// never forwards.
    public init?(method: String) {
        guard let slash = method.firstIndex(of: "/") else { return nil }
        let qualifiedService = method[..<slash]
        let components = qualifiedService.split(separator: ".", omittingEmptySubsequences: false)
        guard components.count == 4 else { return nil }
        let area = components[1]
        let service = components[3]
        if Self.internalAreas.contains(area) || service.hasSuffix("Internal") { return nil }
        if service.hasSuffix("Admin") {
            self = .admin
        } else if Self.loginMethods.contains(method) {
            self = .login
        } else if Self.anonymousServices.contains(qualifiedService) {
            self = .anonymous
        } else {
            self = .player
        }
    }
}
