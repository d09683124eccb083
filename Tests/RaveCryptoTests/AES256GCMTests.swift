import RaveCrypto
import Testing

/// AES-256 known answers from the GCM specification's test cases 13–16 (McGrew and Viega, the vectors NIST's
/// GCM validation uses), plus the failures that make sealing worth having.
@Suite("AES-256-GCM")
struct AES256GCMTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var key: String
        var nonce: String
        var plaintext: String
        var associatedData: String
        var ciphertext: String
        var tag: String
        var testDescription: String { name }
    }

    static let key15 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
    static let plaintext15 =
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
    static let ciphertext15 =
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"

    static let vectors = [
        Vector(
            name: "test case 13 (empty)", key: String(repeating: "00", count: 32),
            nonce: String(repeating: "00", count: 12),
            plaintext: "", associatedData: "", ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        Vector(
            name: "test case 14", key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12),
            plaintext: String(repeating: "00", count: 16), associatedData: "",
            ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        Vector(
            name: "test case 15", key: key15, nonce: "cafebabefacedbaddecaf888", plaintext: plaintext15,
            associatedData: "", ciphertext: ciphertext15, tag: "b094dac5d93471bdec1a502270e3cc6c"),
        Vector(
            name: "test case 16 (with associated data)", key: key15, nonce: "cafebabefacedbaddecaf888",
            plaintext: String(plaintext15.prefix(120)), associatedData: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            ciphertext: String(ciphertext15.prefix(120)), tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test(arguments: vectors)
    func sealsAndOpensTheSpecificationVectors(_ vector: Vector) throws {
        let key = try SymmetricKey(bytes: try #require(Hex.decode(vector.key)))
        let plaintext = try #require(Hex.decode(vector.plaintext))
        let associatedData = try #require(Hex.decode(vector.associatedData))
        let nonce: [UInt8] = try #require(Hex.decode(vector.nonce))
        let box = try AES256GCM.seal(plaintext, using: key, nonce: nonce, authenticating: associatedData)
        #expect(Hex.encode(box.ciphertext) == vector.ciphertext)
        #expect(Hex.encode(box.tag) == vector.tag)
        #expect(try AES256GCM.open(box, using: key, authenticating: associatedData) == plaintext)
    }

    @Test func openingFailsWithAWrongKeyOtherAssociatedDataOrAnAlteredByte() throws {
        let key = try SymmetricKey()
        let box = try AES256GCM.seal(Array("a signing key".utf8), using: key, authenticating: Array("row 1".utf8))
        #expect(try AES256GCM.open(box, using: key, authenticating: Array("row 1".utf8)) == Array("a signing key".utf8))

        let wrongKey = #expect(throws: CryptoError.self) {
            try AES256GCM.open(box, using: SymmetricKey(), authenticating: Array("row 1".utf8))
        }
        #expect(wrongKey?.reason == .sealedDataRejected)
        let otherRow = #expect(throws: CryptoError.self) {
            try AES256GCM.open(box, using: key, authenticating: Array("row 2".utf8))
        }
        #expect(otherRow?.reason == .sealedDataRejected)
        for index in box.combined.indices {
            var altered = box.combined
            altered[index] ^= 0x01
            #expect(throws: CryptoError.self) {
                try AES256GCM.open(
                    AES256GCM.SealedBox(combined: altered), using: key, authenticating: Array("row 1".utf8))
            }
        }
    }

    @Test func randomNoncesMakeEverySealingDifferent() throws {
        let key = try SymmetricKey()
        let first = try AES256GCM.seal([1, 2, 3], using: key)
        let second = try AES256GCM.seal([1, 2, 3], using: key)
        #expect(first.nonce != second.nonce)
        #expect(first.ciphertext != second.ciphertext)
    }

    @Test func malformedInputsAreRefusedWithReasons() throws {
        let short = #expect(throws: CryptoError.self) { try SymmetricKey(bytes: [UInt8](repeating: 0, count: 16)) }
        #expect(short?.reason == .invalidArgument)
        let nonce = #expect(throws: CryptoError.self) { try AES256GCM.seal([], using: SymmetricKey(), nonce: [0]) }
        #expect(nonce?.reason == .invalidArgument)
        let truncated = #expect(throws: CryptoError.self) {
            try AES256GCM.SealedBox(combined: [UInt8](repeating: 0, count: 27))
        }
        #expect(truncated?.reason == .sealedDataRejected)
    }
}
