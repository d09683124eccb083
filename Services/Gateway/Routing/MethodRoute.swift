import RaveDynamic
import RaveRPC

/// What the gateway does with a method name: which service serves it and which credential it needs.
///
/// Names are `rave.<area>.v1.<Service>/<Method>`, and only the methods of Proto/ are routed (`knownMethods`):
/// any other name is UNIMPLEMENTED before any credential is looked at. The area names the backend service. The
/// service's suffix
/// decides access: `<Area>Admin` needs the admin credential, `<Area>Internal` and everything in `rave.merge.v1`
/// are for services only and never leave the backend network (PERMISSION_DENIED, before any credential is
/// looked at), and the identity login methods need no token.
struct MethodRoute: Sendable, Hashable {
    /// Who may call a method through the gateway.
    enum Access: Sendable, Hashable {
        /// Signs a player in: no token needed (GuestLogin, SignUp, …).
        case login
        /// Serves clients that have no account yet (a fresh install following a link): no token needed.
        case anonymous
        /// Needs a valid access token.
        case player
        /// Needs the admin client certificate.
        case admin
    }

    /// The backend service (the area of the package).
    var service: String
    var access: Access

    /// Identity methods that create or renew a session, or recover an account whose password is lost (the player has
    /// no session then), so cannot require one.
    static let loginMethods: Set<String> = [
        "rave.identity.v1.Identity/GuestLogin", "rave.identity.v1.Identity/SignUp",
        "rave.identity.v1.Identity/LoginWithPassword", "rave.identity.v1.Identity/LoginWithProvider",
        "rave.identity.v1.Identity/CompleteTwoFactorLogin", "rave.identity.v1.Identity/RefreshSession",
        "rave.identity.v1.Identity/RequestPasswordReset", "rave.identity.v1.Identity/ResetPassword",
    ]

    /// Every method of Proto/ (from the generated descriptors), the only names the gateway routes; also the
    /// closed set its metrics name methods from.
    static let knownMethods = Set(DescriptorRegistry.shared.methods.keys)

    /// Services whose every method is for clients without an account (gifts' install links).
    static let anonymousServices: Set<Substring> = ["rave.gifts.v1.GiftsInstall"]

    /// Classifies `method`, or throws UNIMPLEMENTED (malformed or unknown name) or PERMISSION_DENIED (internal
    /// method).
    init(method: String) throws(RPCError) {
        guard let slash = method.firstIndex(of: "/") else {
            throw .unimplemented(
                "method \"\(MethodNames.printable(method))\" is not of the form rave.<area>.v1.<Service>/<Method>")
        }
        let qualifiedService = method[..<slash]
        let methodName = method[method.index(after: slash)...]
        let components = qualifiedService.split(separator: ".", omittingEmptySubsequences: false)
        guard components.count == 4, components[0] == "rave", components[2] == "v1",
            !components[1].isEmpty, !components[3].isEmpty, !methodName.isEmpty, !methodName.contains("/")
        else {
            throw .unimplemented(
                "method \"\(MethodNames.printable(method))\" is not of the form rave.<area>.v1.<Service>/<Method>")
        }
        guard Self.knownMethods.contains(method) else {
            throw .unimplemented("method \"\(MethodNames.printable(method))\" does not exist")
        }
        let area = String(components[1])
        let serviceName = components[3]
        // Contracts between services only: the merge saga's participants and the event sinks.
        if area == "merge" || area == "events" || serviceName.hasSuffix("Internal") {
            throw .permissionDenied(
                "\(qualifiedService) is internal to the backend and not reachable through the gateway")
        }
        service = area
        if serviceName.hasSuffix("Admin") {
            access = .admin
        } else if Self.loginMethods.contains(method) {
            access = .login
        } else if Self.anonymousServices.contains(qualifiedService) {
            access = .anonymous
        } else {
            access = .player
        }
    }
}
