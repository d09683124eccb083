import RaveCrypto
import Testing

/// Known-answer vectors: SHA-256 from FIPS 180-2 appendix B, HMAC-SHA256 from RFC 4231 §4, HMAC-SHA1 from RFC 2202.
@Suite("Digests and MACs")
struct DigestTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func sha256MatchesFIPS180Vectors(message: String, digest: String) {
        #expect(Hex.encode(Digest.sha256(message)) == digest)
        #expect(Hex.encode(Digest.sha256(Array(message.utf8))) == digest)
    }

    @Test func sha256OfAMillionAs() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(
            Hex.encode(Digest.sha256(message)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func sha256IntoACallersBufferWritesExactlyThirtyTwoBytes() {
        var output = [UInt8](repeating: 0xEE, count: 40)
        Array("abc".utf8).withUnsafeBytes { input in
            output.withUnsafeMutableBytes { Digest.sha256(input, into: $0) }
        }
        #expect(Hex.encode(Array(output.prefix(32))) == Hex.encode(Digest.sha256("abc")))
        #expect(output.suffix(8).allSatisfy { $0 == 0xEE })
    }

    /// RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (case 5 truncates the output, which we never do).
    @Test(arguments: [
        (
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            "4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            String(repeating: "aa", count: 20), String(repeating: "dd", count: 50),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        (
            "0102030405060708090a0b0c0d0e0f10111213141516171819", String(repeating: "cd", count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            String(repeating: "aa", count: 131),
            "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            String(repeating: "aa", count: 131),
            "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e6420"
                + "61206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520"
                + "686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ])
    func hmacSHA256MatchesRFC4231(key: String, data: String, mac: String) throws {
        let key = try #require(Hex.decode(key))
        let data = try #require(Hex.decode(data))
        #expect(Hex.encode(Digest.hmacSHA256(key: key, message: data)) == mac)

        var output = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { key in
            data.withUnsafeBytes { data in
                output.withUnsafeMutableBytes { Digest.hmacSHA256(key: key, message: data, into: $0) }
            }
        }
        #expect(Hex.encode(output) == mac)
    }

    @Test func hmacWithAnEmptyKeyIsDefined() {
        // RFC 2104 pads any key to the block size, so an empty key is a key of zeros; OpenSSL must not read it as
        // "no key".
        #expect(
            Hex.encode(Digest.hmacSHA256(key: [], message: []))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    /// RFC 2202 test case 2 (the one-time codes' MAC).
    @Test func hmacSHA1MatchesRFC2202() {
        let mac = Digest.hmacSHA1(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    }

    @Test func hexRoundTripsAndRejectsOddOrForeignDigits() {
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.decode("000FA5ff") == [0x00, 0x0f, 0xa5, 0xff])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.encode([]) == "")
    }

    @Test func constantTimeEqualsComparesContentAndLength() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2], [1, 2, 3]))
        #expect(ConstantTime.equals([], []))
    }

    @Test func randomBytesHaveTheLengthAskedAndDiffer() throws {
        let first = try SecureRandom.bytes(count: 32)
        let second = try SecureRandom.bytes(count: 32)
        #expect(first.count == 32 && second.count == 32)
        #expect(first != second)
        #expect(try SecureRandom.bytes(count: 0).isEmpty)
    }
}
