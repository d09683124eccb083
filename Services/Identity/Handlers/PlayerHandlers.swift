import RaveMessages
import RaveRPC
import RaveServices

/// Serves `rave.identity.v1.Identity`: the methods players reach through the gateway.
///
/// The methods live in extensions by area (accounts, sessions, profile, providers, merge, two-factor).
struct PlayerHandlers: IdentityV1.IdentityHandler {
    let dependencies: IdentityDependencies
}
