import Foundation
import Testing

@testable import RaveAuth

@Suite("RaveAuth encodings and primitives")
struct CryptoEncodingTests {
    /// RFC 4648 §10 vectors, translated to the URL-safe alphabet without padding.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func base64URLMatchesRFC4648(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func base64URLUsesTheURLSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test func base64URLRoundTripsEveryLength() throws {
        for length in 0..<70 {
            let bytes = try SecureRandom.bytes(count: length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test(arguments: ["Zg==", "Zm9v+", "Zm9v/", "Z", "Zm9vY", "Zh", "Zm9=", "Zm 9v", "é"])
    func base64URLRejectsPaddingStandardAlphabetAndNonCanonicalInput(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func opaqueTokensAreRandomAndHashedDeterministically() throws {
        let token = try OpaqueToken.generate()
        #expect(token.count == 43)
        #expect(try OpaqueToken.generate() != token)
        #expect(OpaqueToken.hash(token) == OpaqueToken.hash(token))
        #expect(OpaqueToken.hash(token).count == 32)
    }

    @Test func cryptoErrorDescribesReasonAndMessage() {
        let error = CryptoError(.invalidToken, "access token signature is invalid")
        #expect(error.description == "invalid_token: access token signature is invalid")
    }
}
