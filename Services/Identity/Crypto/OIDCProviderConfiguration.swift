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

    /// Reads every provider configured in `environment`.
    ///
    /// Per provider P (GOOGLE, APPLE, FACEBOOK): `RAVE_OIDC_P_JWKS` (path of the JWKS file; the provider is enabled
    /// when set), `RAVE_OIDC_P_AUDIENCE` (comma-separated client ids, required when enabled) and optionally
    /// `RAVE_OIDC_P_ISSUER` (comma-separated, replacing the well-known issuers). Errors name the variable.
    public static func fromEnvironment(
        _ environment: [String: String]
    ) throws(CryptoError) -> [OIDCProviderConfiguration] {
        var configurations: [OIDCProviderConfiguration] = []
        for provider in OIDCProvider.allCases {
            let prefix = "RAVE_OIDC_\(provider.environmentName)_"
            let jwks = environment[prefix + "JWKS"]?.trimmingWhitespace ?? ""
            let audiences = list(environment[prefix + "AUDIENCE"])
            let issuers = list(environment[prefix + "ISSUER"])
            guard !jwks.isEmpty else {
                if !audiences.isEmpty || !issuers.isEmpty {
                    throw .configuration(
                        "\(prefix)JWKS must name the provider's key file when \(prefix)AUDIENCE or \(prefix)ISSUER "
                            + "is set")
                }
                continue
            }
            guard !audiences.isEmpty else {
                throw .configuration(
                    "\(prefix)AUDIENCE must list the accepted client ids (comma-separated) when \(prefix)JWKS is set")
            }
            configurations.append(
                OIDCProviderConfiguration(
                    provider: provider, audiences: audiences, jwksPath: jwks, issuers: issuers.isEmpty ? nil : issuers))
        }
        return configurations
    }

    private static func list(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { String($0).trimmingWhitespace }.filter { !$0.isEmpty }
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
