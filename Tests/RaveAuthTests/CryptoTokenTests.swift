import Foundation
import Testing

@testable import RaveAuth

@Suite("Access tokens")
struct CryptoTokenTests {
    let privateKey: Ed25519PrivateKey
    let keyID: String
    let signer: AccessTokenSigner
    let verifier: AccessTokenVerifier
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws {
        privateKey = try Ed25519PrivateKey()
        keyID = SigningKeySet.thumbprint(of: try privateKey.publicKey())
        signer = AccessTokenSigner(keyID: keyID, privateKey: privateKey)
        verifier = AccessTokenVerifier(
            keys: SigningKeySet(keys: [.init(keyID: keyID, publicKey: try privateKey.publicKey())]))
    }

    func issue(lifetime: Int64 = 900, at time: Date? = nil) throws -> AccessTokenSigner.IssuedToken {
        try signer.issue(
            subject: "0123456789abcdef0123456789abcdef", applicationID: "fedcba9876543210fedcba9876543210",
            sessionID: "00112233445566778899aabbccddeeff", scopes: ["player", "social"], lifetime: lifetime,
            now: time ?? now)
    }

    /// Replaces one part of a compact token.
    func replacing(part index: Int, of token: String, with json: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = Base64URL.encode(Array(json.utf8))
        return parts.joined(separator: ".")
    }

    @Test func issuedTokenVerifiesWithAllClaims() throws {
        let issued = try issue()
        let claims = try verifier.verify(issued.token, now: now)
        #expect(claims == issued.claims)
        #expect(claims.issuer == "rave-identity")
        #expect(claims.subject == "0123456789abcdef0123456789abcdef")
        #expect(claims.applicationID == "fedcba9876543210fedcba9876543210")
        #expect(claims.sessionID == "00112233445566778899aabbccddeeff")
        #expect(claims.scopes == ["player", "social"])
        #expect(claims.hasScope("social"))
        #expect(claims.issuedAt == 1_800_000_000)
        #expect(claims.expiresAt == 1_800_000_900)
        #expect(claims.tokenID.count == 16)
    }

    /// The claims' wire form (docs/identity.md): this field order, compact, times as integers, scopes joined by a
    /// space, and strings escaped as JSON.
    @Test func claimsJSONIsCompactInTheDocumentedOrder() throws {
        let claims = AccessTokenClaims(
            issuer: "rave \"identity\"\\\n", subject: "0123456789abcdef0123456789abcdef",
            applicationID: "fedcba9876543210fedcba9876543210", sessionID: "00112233445566778899aabbccddeeff",
            scopes: ["player", "authenticated"], issuedAt: 1_800_000_000, expiresAt: -5, tokenID: "AAECAwQFBgcICQoL")
        let expected =
            #"{"iss":"rave \"identity\"\\\n","sub":"0123456789abcdef0123456789abcdef","#
            + #""app":"fedcba9876543210fedcba9876543210","sid":"00112233445566778899aabbccddeeff","#
            + #""scp":"player authenticated","iat":1800000000,"exp":-5,"jti":"AAECAwQFBgcICQoL"}"#
        #expect(String(decoding: claims.jsonBytes, as: UTF8.self) == expected)
        #expect(try AccessTokenClaims(jsonBytes: claims.jsonBytes) == claims)
    }

    /// A token is exactly base64url(header) "." base64url(claims) "." base64url(Ed25519 signature of the first two
    /// parts): Ed25519 is deterministic, so the one-buffer assembly must match the parts made one by one.
    @Test func tokenIsTheSignedCompactSerialization() throws {
        let issued = try issue()
        let header = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"\(keyID)\"}"
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(issued.claims.jsonBytes)
        let signature = try privateKey.signature(for: Array(input.utf8))
        #expect(issued.token == input + "." + Base64URL.encode(signature))
    }

    @Test func headerNamesEdDSAAndTheKey() throws {
        let token = try issue().token
        let header = try #require(Base64URL.decode(token.split(separator: ".")[0]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: String])
        #expect(object == ["alg": "EdDSA", "typ": "JWT", "kid": keyID])
    }

    @Test func expiryAllowsThirtySecondsOfSkew() throws {
        let token = try issue(lifetime: 60).token
        #expect(throws: Never.self) { try verifier.verify(token, now: now.addingTimeInterval(89)) }
        let error = #expect(throws: CryptoError.self) { try verifier.verify(token, now: now.addingTimeInterval(90)) }
        #expect(error?.reason == .expiredToken)
    }

    /// Caches of verified claims ask `isExpired` rather than comparing `exp` themselves: for every second around
    /// the end, the claims' rule and the verifier agree.
    @Test func claimsExpiryAndTheVerifierAgreeAtEverySecond() throws {
        let issued = try issue(lifetime: 60)
        for offset in stride(from: 55, through: 95, by: 1) {
            for fraction in [0.0, 0.5, 0.999] {
                let time = now.addingTimeInterval(Double(offset) + fraction)
                let verified = (try? verifier.verify(issued.token, now: time)) != nil
                #expect(verified == !issued.claims.isExpired(at: time), "at +\(offset)+\(fraction) s")
            }
        }
        #expect(!issued.claims.isExpired(at: now.addingTimeInterval(89.9)))
        #expect(issued.claims.isExpired(at: now.addingTimeInterval(90)))
    }

    @Test func tokenIssuedInTheFutureIsRejected() throws {
        let token = try issue(at: now.addingTimeInterval(120)).token
        #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
    }

    @Test(arguments: ["none", "HS256", "RS256", "ES256", "eddsa", "Ed25519", ""])
    func otherAlgorithmsAreRejected(algorithm: String) throws {
        let token = replacing(part: 0, of: try issue().token, with: "{\"alg\":\"\(algorithm)\",\"kid\":\"\(keyID)\"}")
        let error = #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
        #expect(error?.reason == .invalidToken)
    }

    @Test func unsignedNoneTokenIsRejected() throws {
        let token = try issue().token
        let parts = token.split(separator: ".")
        let header = Base64URL.encode(Array("{\"alg\":\"none\",\"typ\":\"JWT\"}".utf8))
        #expect(throws: CryptoError.self) { try verifier.verify("\(header).\(parts[1]).", now: now) }
    }

    @Test func tamperedPayloadIsRejected() throws {
        let issued = try issue()
        var claims = issued.claims
        claims.subject = "ffffffffffffffffffffffffffffffff"
        let token = replacing(part: 1, of: issued.token, with: String(decoding: claims.jsonBytes, as: UTF8.self))
        let error = #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
        #expect(error?.message == "access token signature is invalid")
    }

    @Test func unknownKeyIDIsRejected() throws {
        let other = try Ed25519PrivateKey()
        let token = try AccessTokenSigner(keyID: "other", privateKey: other).sign(try issue().claims)
        let error = #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
        #expect(error?.message == "access token key id is unknown")
    }

    @Test func signatureByAnotherKeyUnderAKnownKeyIDIsRejected() throws {
        let forger = AccessTokenSigner(keyID: keyID, privateKey: try Ed25519PrivateKey())
        let token = try forger.sign(try issue().claims)
        #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
    }

    @Test func wrongIssuerIsRejected() throws {
        var claims = try issue().claims
        claims.issuer = "someone-else"
        let token = try signer.sign(claims)
        #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "!!.??.**", "eyJhbGciOiJFZERTQSJ9.e30=.AAAA"])
    func malformedTokensAreRejected(token: String) {
        let error = #expect(throws: CryptoError.self) { try verifier.verify(token, now: now) }
        #expect(error?.reason == .invalidToken)
    }

    @Test func keysRoundTripThroughPEM() throws {
        let privatePEM = try privateKey.pemRepresentation()
        #expect(privatePEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let restored = try Ed25519PrivateKey(pem: privatePEM)
        #expect(try restored.publicKey().rawRepresentation == privateKey.publicKey().rawRepresentation)

        let publicPEM = try privateKey.publicKey().pemRepresentation()
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let publicKey = try Ed25519PublicKey(pem: publicPEM)
        #expect(publicKey.rawRepresentation == (try privateKey.publicKey().rawRepresentation))

        // A token signed with the restored key verifies with the original key set.
        let token = try AccessTokenSigner(keyID: keyID, privateKey: restored).sign(try issue().claims)
        #expect(throws: Never.self) { try verifier.verify(token, now: now) }
    }

    @Test func pemOfAnotherKeyTypeIsRejected() throws {
        #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pem: "not a key") }
        #expect(throws: CryptoError.self) {
            try Ed25519PublicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: [1, 2, 3]) }
    }

    @Test func keySetRoundTripsThroughJWKS() throws {
        let second = try Ed25519PrivateKey().publicKey()
        let set = SigningKeySet(keys: [
            .init(keyID: keyID, publicKey: try privateKey.publicKey()), .init(keyID: "second", publicKey: second),
        ])
        let parsed = try SigningKeySet(jwksJSON: set.jwksJSON())
        #expect(parsed.keys.map(\.keyID) == [keyID, "second"])
        #expect(parsed.publicKey(forKeyID: "second")?.rawRepresentation == second.rawRepresentation)
        let token = try issue().token
        #expect(throws: Never.self) { try AccessTokenVerifier(keys: parsed).verify(token, now: now) }
    }

    @Test func thumbprintIsStableAndDistinct() throws {
        let publicKey = try privateKey.publicKey()
        #expect(SigningKeySet.thumbprint(of: publicKey) == keyID)
        #expect(SigningKeySet.thumbprint(of: try Ed25519PrivateKey().publicKey()) != keyID)
        #expect(keyID.count == 43)
    }

    @Test func claimsWithSpecialCharactersRoundTrip() throws {
        var claims = try issue().claims
        claims.sessionID = "quote\" backslash\\ newline\n tab\t bell\u{7} é"
        let token = try signer.sign(claims)
        #expect(try verifier.verify(token, now: now).sessionID == claims.sessionID)
    }

    @Test func signAndVerifyCostIsMeasured() throws {
        let claims = try issue().claims
        let token = try signer.sign(claims)
        // The fastest of several batches: the machine running tests is shared, and the minimum is the least
        // disturbed estimate of the real cost.
        let clock = ContinuousClock()
        var signing = Duration.seconds(1)
        var verifying = Duration.seconds(1)
        for _ in 0..<10 {
            signing = min(signing, try clock.measure { for _ in 0..<100 { _ = try signer.sign(claims) } } / 100)
            verifying = min(
                verifying, try clock.measure { for _ in 0..<100 { _ = try verifier.verify(token, now: now) } } / 100)
        }
        // Printed, not asserted: how fast is `make bench`'s business (docs/BENCHMARKS.md).
        print("access token: sign \(signing) each, verify \(verifying) each")
    }
}
