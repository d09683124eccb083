/// A social login provider whose OIDC ID tokens the identity service accepts.
public enum OIDCProvider: String, Sendable, CaseIterable {
    /// Sign in with Google.
    case google
    /// Sign in with Apple.
    case apple
    /// Facebook Limited Login (an OIDC ID token instead of a Graph API access token).
    case facebook

    /// The upper-case name used in environment variables (`RAVE_OIDC_GOOGLE_…`).
    var environmentName: String { rawValue.uppercased() }

    /// The issuers each provider's ID tokens carry.
    public var defaultIssuers: [String] {
        switch self {
        case .google: ["https://accounts.google.com", "accounts.google.com"]
        case .apple: ["https://appleid.apple.com"]
        case .facebook: ["https://www.facebook.com", "https://facebook.com"]
        }
    }

    /// Facebook Limited Login tokens carry only addresses Facebook has confirmed, without an `email_verified`
    /// claim; the other providers say explicitly.
    var emailIsVerifiedWithoutClaim: Bool { self == .facebook }
}

/// What to accept from one provider: its keys (a JWKS file), issuers and audiences (our client ids).
public struct OIDCProviderConfiguration: Sendable, Hashable {
    /// The provider.
    public var provider: OIDCProvider
    /// Accepted `iss` values.
    public var issuers: [String]
    /// Accepted `aud` values: the app's client ids registered with the provider.
    public var audiences: [String]
    /// Path of the provider's JWKS document, reloaded when its modification time changes.
    public var jwksPath: String

    /// Creates a configuration; `issuers` defaults to the provider's well-known issuers.
    public init(provider: OIDCProvider, audiences: [String], jwksPath: String, issuers: [String]? = nil) {
        self.provider = provider
        self.issuers = issuers ?? provider.defaultIssuers
        self.audiences = audiences
        self.jwksPath = jwksPath
    }
}
