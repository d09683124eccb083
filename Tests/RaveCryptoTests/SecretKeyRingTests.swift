import Foundation
import RaveCrypto
import Testing

@Suite("Secret key ring")
struct SecretKeyRingTests {
    static func ring(_ lines: String...) throws -> SecretKeyRing {
        try SecretKeyRing(fileContents: lines.joined(separator: "\n"))
    }

    @Test func theFirstKeySealsAndEveryKeyOpensWhatItSealed() throws {
        let old = try SecretKeyRing.newKeyLine(id: "2025-01")
        let new = try SecretKeyRing.newKeyLine(id: "2026-01")
        let before = try Self.ring("# identity's keys", "", old)
        let sealedBefore = try before.seal(Array("totp secret".utf8), context: Array("two_factor:u1".utf8))
        #expect(SecretKeyRing.keyID(ofSealed: sealedBefore) == "2025-01")

        let rotated = try Self.ring(new, old)
        #expect(rotated.primaryKeyID == "2026-01")
        #expect(try rotated.open(sealedBefore, context: Array("two_factor:u1".utf8)) == Array("totp secret".utf8))
        let sealedAfter = try rotated.seal(Array("totp secret".utf8), context: Array("two_factor:u1".utf8))
        #expect(SecretKeyRing.keyID(ofSealed: sealedAfter) == "2026-01")

        // Once the old key is gone, what it sealed can no longer be opened: re-seal before removing a key.
        let retired = try Self.ring(new)
        let missing = #expect(throws: CryptoError.self) {
            try retired.open(sealedBefore, context: Array("two_factor:u1".utf8))
        }
        #expect(missing?.reason == .sealedDataRejected)
        #expect(missing?.message.contains("2025-01") == true)
    }

    @Test func aSealedValueOpensOnlyForItsOwnRowAndKey() throws {
        let ring = try Self.ring(try SecretKeyRing.newKeyLine(id: "k1"))
        let sealed = try ring.seal(Array("secret".utf8), context: Array("row-a".utf8))
        #expect(!sealed.windows(ofCount: 6).contains { Array($0) == Array("secret".utf8) })
        #expect(throws: CryptoError.self) { try ring.open(sealed, context: Array("row-b".utf8)) }

        // The same id with other key bytes: the tag does not match.
        let impostor = try Self.ring(try SecretKeyRing.newKeyLine(id: "k1"))
        let wrongKey = #expect(throws: CryptoError.self) { try impostor.open(sealed, context: Array("row-a".utf8)) }
        #expect(wrongKey?.reason == .sealedDataRejected)

        // The header is authenticated too: relabelled to another id holding the very same key bytes, it fails.
        let keyText = try SecretKeyRing.newKeyLine(id: "k1").split(separator: " ")[1]
        let twins = try Self.ring("k1 \(keyText)", "j1 \(keyText)")
        var relabelled = try twins.seal(Array("secret".utf8), context: Array("row-a".utf8))
        relabelled[2] = UInt8(ascii: "j")
        #expect(SecretKeyRing.keyID(ofSealed: relabelled) == "j1")
        #expect(throws: CryptoError.self) { try twins.open(relabelled, context: Array("row-a".utf8)) }
        #expect(throws: CryptoError.self) { try ring.open(Array("plaintext".utf8), context: Array("row-a".utf8)) }
    }

    @Test(arguments: [
        "", "# only a comment", "k1", "k1 not-base64!", "k1 AAAA",
        "bad/id AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nk1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    ])
    func malformedKeyFilesAreConfigurationErrors(contents: String) {
        let error = #expect(throws: CryptoError.self) { try SecretKeyRing(fileContents: contents) }
        #expect(error?.reason == .configuration)
    }

    @Test func keyFilesOpenToOtherUsersAreRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rave-keys-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let line = try SecretKeyRing.newKeyLine(id: "k1")
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(line.utf8), attributes: [.posixPermissions: 0o644]))
        let open = #expect(throws: CryptoError.self) { try SecretKeyRing(contentsOfFile: path) }
        #expect(open?.message.contains("chmod 600") == true)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try SecretKeyRing(contentsOfFile: path).primaryKeyID == "k1")
        // Through a symbolic link (as Kubernetes mounts secrets), the file it leads to is what is checked.
        let link = path + ".link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(try SecretKeyRing(contentsOfFile: link).primaryKeyID == "k1")
        let missing = #expect(throws: CryptoError.self) { try SecretKeyRing(contentsOfFile: path + ".missing") }
        #expect(missing?.reason == .configuration)
    }
}

extension Array {
    /// Every run of `count` consecutive elements.
    fileprivate func windows(ofCount count: Int) -> [ArraySlice<Element>] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { self[$0..<($0 + count)] }
    }
}
