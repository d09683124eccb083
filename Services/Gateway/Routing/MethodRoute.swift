import RaveDynamic
import RaveGatewayRules
import RaveRPC

/// What the gateway does with a method name: which service serves it and which credential it needs.
///
/// Names are `rave.<area>.v1.<Service>/<Method>`, and only the methods of Proto/ are routed (`knownMethods`):
/// any other name is UNIMPLEMENTED before any credential is looked at. The area names the backend service. The
/// credential comes from `MethodAccess` (RaveGatewayRules), the rule docs/openapi.json is generated from:
/// `<Area>Admin` needs the admin credential, `<Area>Internal` and everything in `rave.merge.v1`, `rave.erasure.v1`
/// and `rave.events.v1` are for services only and never leave the backend network (PERMISSION_DENIED, before any
/// credential is looked at), and the identity login methods need no token.
struct MethodRoute: Sendable, Hashable {
    /// Who may call a method through the gateway.
    typealias Access = MethodAccess

    /// The backend service (the area of the package).
    var service: String
    var access: Access

    /// Identity methods that need no token (`MethodAccess.loginMethods`).
    static var loginMethods: Set<String> { MethodAccess.loginMethods }

    /// Every method of Proto/ (from the generated descriptors), the only names the gateway routes; also the
    /// closed set its metrics name methods from.
    static let knownMethods = Set(DescriptorRegistry.shared.methods.keys)

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
        guard let access = MethodAccess(method: method) else {
            throw .permissionDenied(
                "\(qualifiedService) is internal to the backend and not reachable through the gateway")
        }
        service = String(components[1])
        self.access = access
    }
}
