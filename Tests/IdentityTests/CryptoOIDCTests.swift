import Foundation
import Testing

@testable import Identity

@Suite("OIDC ID token verification")
struct CryptoOIDCTests {
    static let audience = "com.example.rave.client"
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Claims a provider would issue, valid at `now`, with overrides merged in.
    func claims(issuer: String = "https://accounts.google.com", _ extra: [String: String] = [:]) -> String {
        var members: [String: String] = [
            "iss": "\"\(issuer)\"", "sub": "\"provider-user-1\"", "aud": "\"\(Self.audience)\"",
            "iat": "1800000000", "exp": "1800003600",
        ]
        members.merge(extra) { _, new in new }
        return "{" + members.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    /// A verifier for `provider` reading `jwksPath`, re-checking the file on every call.
    func verifier(_ provider: OIDCProvider, _ jwksPath: String) -> OIDCVerifier {
        OIDCVerifier(
            configurations: [
                OIDCProviderConfiguration(provider: provider, audiences: [Self.audience], jwksPath: jwksPath)
            ],
            reloadInterval: .zero)
    }

    @Test func googleRS256TokenVerifiesWithProfile() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.rsa()
        try provider.publish([key])
        let token = try provider.token(
            claims: claims([
                "email": "\"ada@example.com\"", "email_verified": "true", "name": "\"Ada\"",
                "picture": "\"https://example.com/a.png\"", "nonce": "\"n-1\"",
            ]), key: key)
        let identity = try verifier(.google, provider.jwksPath).verify(
            idToken: token, from: .google, nonce: "n-1", now: now)
        #expect(
            identity
                == VerifiedIdentity(
                    provider: .google, subject: "provider-user-1", email: "ada@example.com", name: "Ada",
                    picture: "https://example.com/a.png"))
    }

    @Test func appleES256TokenVerifiesAndReadsStringEmailVerified() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.p256("apple-ec")
        try provider.publish([try TestProviderKey.rsa(), key])
        let verifier = verifier(.apple, provider.jwksPath)
        let verified = try provider.token(
            claims: claims(
                issuer: "https://appleid.apple.com", ["email": "\"a@icloud.com\"", "email_verified": "\"true\""]),
            key: key)
        #expect(try verifier.verify(idToken: verified, from: .apple, now: now).email == "a@icloud.com")
        let unverified = try provider.token(
            claims: claims(
                issuer: "https://appleid.apple.com", ["email": "\"a@icloud.com\"", "email_verified": "\"false\""]),
            key: key)
        #expect(try verifier.verify(idToken: unverified, from: .apple, now: now).email == nil)
    }

    @Test func emailWithoutVerifiedClaimCountsOnlyForFacebook() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.rsa()
        try provider.publish([key])
        let facebook = try provider.token(
            claims: claims(issuer: "https://www.facebook.com", ["email": "\"f@example.com\""]), key: key)
        #expect(
            try verifier(.facebook, provider.jwksPath).verify(idToken: facebook, from: .facebook, now: now).email
                == "f@example.com")
        let google = try provider.token(claims: claims(["email": "\"g@example.com\""]), key: key)
        #expect(try verifier(.google, provider.jwksPath).verify(idToken: google, from: .google, now: now).email == nil)
    }

    @Test func audienceMayBeAnArray() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.p256("k")
        try provider.publish([key])
        let token = try provider.token(claims: claims(["aud": "[\"other\",\"\(Self.audience)\"]"]), key: key)
        #expect(
            try verifier(.google, provider.jwksPath).verify(idToken: token, from: .google, now: now).subject
                == "provider-user-1")
    }

    /// Expects `token` to be refused by a Google verifier over `provider`'s keys, with `reason`.
    func expectRejected(
        _ token: String, _ provider: TestOIDCProvider, nonce: String? = nil, at time: Date? = nil,
        reason: CryptoError.Reason = .invalidToken
    ) {
        let error = #expect(throws: CryptoError.self) {
            try verifier(.google, provider.jwksPath).verify(
                idToken: token, from: .google, nonce: nonce, now: time ?? now)
        }
        #expect(error?.reason == reason)
    }

    @Test func rejectedAlgorithmsAndForgeries() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let rsa = try TestProviderKey.rsa("rsa")
        let ec = try TestProviderKey.p256("ec")
        try provider.publish([rsa, ec])
        let good = try provider.token(claims: claims(), key: rsa)
        let parts = good.split(separator: ".").map(String.init)

        // alg none, unsigned.
        let none = Base64URL.encode(Array("{\"alg\":\"none\",\"kid\":\"rsa\"}".utf8))
        expectRejected("\(none).\(parts[1]).", provider)
        // HS256 keyed with the public modulus (the classic algorithm-confusion attack) is refused by name.
        expectRejected(
            try provider.token(claims: claims(), key: rsa, header: "{\"alg\":\"HS256\",\"kid\":\"rsa\"}"), provider)
        // An algorithm that does not match the key's type.
        expectRejected(
            try provider.token(claims: claims(), key: rsa, header: "{\"alg\":\"ES256\",\"kid\":\"rsa\"}"), provider)
        expectRejected(
            try provider.token(claims: claims(), key: ec, header: "{\"alg\":\"RS256\",\"kid\":\"ec\"}"), provider)
        // A kid the provider never published, and a signature by a key it did not publish.
        expectRejected(try provider.token(claims: claims(), key: try TestProviderKey.rsa("unknown")), provider)
        expectRejected(try provider.token(claims: claims(), key: try TestProviderKey.rsa("rsa")), provider)
        // A tampered payload under the original signature.
        let tampered = Base64URL.encode(Array(claims(["sub": "\"someone-else\""]).utf8))
        expectRejected("\(parts[0]).\(tampered).\(parts[2])", provider)
        // Garbage.
        expectRejected("not-a-token", provider)
        expectRejected("a.b.c", provider)
    }

    @Test func wrongAudienceIssuerAndNonceAreRejected() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.p256("k")
        try provider.publish([key])
        expectRejected(try provider.token(claims: claims(["aud": "\"someone-elses-app\""]), key: key), provider)
        expectRejected(try provider.token(claims: claims(issuer: "https://appleid.apple.com"), key: key), provider)
        let withNonce = try provider.token(claims: claims(["nonce": "\"expected\""]), key: key)
        expectRejected(withNonce, provider, nonce: "different")
        expectRejected(try provider.token(claims: claims(), key: key), provider, nonce: "expected")
        // Without a nonce requested, the token's own nonce is not checked.
        #expect(throws: Never.self) {
            try verifier(.google, provider.jwksPath).verify(idToken: withNonce, from: .google, now: now)
        }
    }

    @Test func lifetimeIsCheckedWithSixtySecondsOfSkew() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.p256("k")
        try provider.publish([key])
        let token = try provider.token(claims: claims(["exp": "1800000100"]), key: key)
        #expect(throws: Never.self) {
            try verifier(.google, provider.jwksPath).verify(
                idToken: token, from: .google, now: now.addingTimeInterval(159))
        }
        expectRejected(token, provider, at: now.addingTimeInterval(160), reason: .expiredToken)
        expectRejected(try provider.token(claims: claims(["iat": "1800000061"]), key: key), provider)
        expectRejected(try provider.token(claims: claims(["nbf": "1800000061"]), key: key), provider)
        #expect(throws: Never.self) {
            let early = try provider.token(claims: claims(["nbf": "1800000060", "iat": "1800000060"]), key: key)
            _ = try verifier(.google, provider.jwksPath).verify(idToken: early, from: .google, now: now)
        }
    }

    @Test func rotatedKeyFileIsReloaded() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let old = try TestProviderKey.p256("old")
        let new = try TestProviderKey.p256("new")
        try provider.publish([old])
        let verifier = verifier(.google, provider.jwksPath)
        let oldToken = try provider.token(claims: claims(), key: old)
        let newToken = try provider.token(claims: claims(), key: new)
        #expect(throws: Never.self) { try verifier.verify(idToken: oldToken, from: .google, now: now) }
        #expect(throws: CryptoError.self) { try verifier.verify(idToken: newToken, from: .google, now: now) }

        try provider.publish([new])
        #expect(throws: Never.self) { try verifier.verify(idToken: newToken, from: .google, now: now) }
        #expect(throws: CryptoError.self) { try verifier.verify(idToken: oldToken, from: .google, now: now) }

        // A broken file during a deployment keeps the last good keys in service.
        try provider.writeJWKS("{\"keys\": [")
        #expect(throws: Never.self) { try verifier.verify(idToken: newToken, from: .google, now: now) }
    }

    @Test func reloadIsRateLimited() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let first = try TestProviderKey.p256("first")
        try provider.publish([first])
        let verifier = OIDCVerifier(
            configurations: [
                OIDCProviderConfiguration(provider: .google, audiences: [Self.audience], jwksPath: provider.jwksPath)
            ],
            reloadInterval: .seconds(3600))
        #expect(throws: Never.self) {
            try verifier.verify(idToken: try provider.token(claims: claims(), key: first), from: .google, now: now)
        }
        let second = try TestProviderKey.p256("second")
        try provider.publish([second])
        // Within the interval the file is not looked at again.
        #expect(throws: CryptoError.self) {
            try verifier.verify(idToken: try provider.token(claims: claims(), key: second), from: .google, now: now)
        }
    }

    @Test func missingOrInvalidKeyFilesAreConfigurationErrors() throws {
        let provider = try TestOIDCProvider()
        defer { provider.removeFiles() }
        let key = try TestProviderKey.p256("k")
        let token = try provider.token(claims: claims(), key: key)
        let missing = #expect(throws: CryptoError.self) {
            try verifier(.google, provider.jwksPath).verify(idToken: token, from: .google, now: now)
        }
        #expect(missing?.reason == .configuration)

        // A 1024-bit modulus: only its length matters, since such a key is refused before it could verify anything.
        let weakModulus = Base64URL.encode([0xC5] + [UInt8](repeating: 0x3B, count: 127))
        let weak = "{\"kty\":\"RSA\",\"kid\":\"weak\",\"alg\":\"RS256\",\"n\":\"\(weakModulus)\",\"e\":\"AQAB\"}"
        let zero = String(repeating: "A", count: 43)
        for document in [
            "[]", "{\"keys\":[]}", "{\"keys\":[\(weak)]}",
            "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"k\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}]}",
            "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"k\",\"crv\":\"P-256\",\"x\":\"\(zero)\",\"y\":\"\(zero)\"}]}",
        ] {
            try provider.writeJWKS(document)
            #expect(throws: CryptoError.self) { try JSONWebKeySetFile.parse(contentsOf: provider.jwksPath) }
        }
    }

    @Test func unconfiguredProviderIsRefused() throws {
        let error = #expect(throws: CryptoError.self) {
            try OIDCVerifier(configurations: []).verify(idToken: "a.b.c", from: .apple, now: now)
        }
        #expect(error?.reason == .invalidArgument)
        #expect(!OIDCVerifier(configurations: []).isConfigured(.apple))
    }

    // MARK: - Configuration from the environment

    @Test func environmentConfiguresEachProvider() throws {
        let configurations = try OIDCProviderConfiguration.fromEnvironment([
            "RAVE_OIDC_GOOGLE_JWKS": "/etc/rave/google.json", "RAVE_OIDC_GOOGLE_AUDIENCE": "a.apps, b.apps ",
            "RAVE_OIDC_FACEBOOK_JWKS": "/etc/rave/facebook.json", "RAVE_OIDC_FACEBOOK_AUDIENCE": "1234",
            "RAVE_OIDC_FACEBOOK_ISSUER": "https://limited.facebook.test",
        ])
        #expect(
            configurations == [
                OIDCProviderConfiguration(
                    provider: .google, audiences: ["a.apps", "b.apps"], jwksPath: "/etc/rave/google.json"),
                OIDCProviderConfiguration(
                    provider: .facebook, audiences: ["1234"], jwksPath: "/etc/rave/facebook.json",
                    issuers: ["https://limited.facebook.test"]),
            ])
        #expect(configurations[0].issuers == ["https://accounts.google.com", "accounts.google.com"])
        #expect(try OIDCProviderConfiguration.fromEnvironment([:]).isEmpty)
    }

    @Test func environmentErrorsNameTheVariable() {
        let noAudience = #expect(throws: CryptoError.self) {
            try OIDCProviderConfiguration.fromEnvironment(["RAVE_OIDC_APPLE_JWKS": "/k.json"])
        }
        #expect(noAudience?.message.hasPrefix("RAVE_OIDC_APPLE_AUDIENCE") == true)
        let noKeys = #expect(throws: CryptoError.self) {
            try OIDCProviderConfiguration.fromEnvironment(["RAVE_OIDC_GOOGLE_AUDIENCE": "x"])
        }
        #expect(noKeys?.message.hasPrefix("RAVE_OIDC_GOOGLE_JWKS") == true)
    }
}
