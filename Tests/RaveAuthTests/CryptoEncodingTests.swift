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

    /// The encoder against Foundation's standard base64, translated to the URL-safe alphabet without padding: every
    /// length of tail (none, one or two bytes), and an array slice (not contiguous from its start).
    @Test func base64URLMatchesFoundationsBase64AtEveryLength() throws {
        for length in 0..<70 {
            let bytes = try SecureRandom.bytes(count: length)
            let standard = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == standard, "\(length) bytes")
            var appended = Array("prefix.".utf8)
            bytes.withUnsafeBytes { Base64URL.append($0, to: &appended) }
            #expect(appended == Array("prefix.\(standard)".utf8), "\(length) bytes appended")
            #expect(Base64URL.encodedCount(length) == standard.utf8.count)
        }
        let bytes = try SecureRandom.bytes(count: 40)
        #expect(Base64URL.encode(bytes[3..<29]) == Base64URL.encode(Array(bytes[3..<29])))
        #expect(Base64URL.encode(bytes.reversed()) == Base64URL.encode(Array(bytes.reversed())))
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
