import Foundation
import Testing

@testable import Identity

@Suite("Crypto encodings: base32")
struct CryptoEncodingTests {
    /// RFC 4648 §10 base32 vectors, without padding.
    @Test(arguments: [
        ("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
        ("foobar", "MZXW6YTBOI"),
    ])
    func base32MatchesRFC4648(plain: String, encoded: String) {
        #expect(Base32.encode(Array(plain.utf8)) == encoded)
        #expect(Base32.decode(encoded) == Array(plain.utf8))
        #expect(Base32.decode(encoded.lowercased()) == Array(plain.utf8))
    }

    @Test func base32RejectsCharactersOutsideItsAlphabet() {
        #expect(Base32.decode("MZXW1") == nil)
        #expect(Base32.decode("MZXW8") == nil)
        #expect(Base32.decode("MZXW6===") == Array("foo".utf8))
    }
}
