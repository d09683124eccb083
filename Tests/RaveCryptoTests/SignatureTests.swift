import RaveCrypto
import Testing

/// Ed25519 against RFC 8032 §7.1; ECDSA P-256 and RSA against their own round trips and the forms JOSE needs.
@Suite("Signatures")
struct SignatureTests {
    /// RFC 8032 §7.1 tests 1–3: secret key, public key, message, signature.
    @Test(arguments: [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        ),
    ])
    func ed25519MatchesRFC8032(secret: String, public publicHex: String, message: String, signature: String) throws {
        let privateKey = try Ed25519PrivateKey(rawRepresentation: try #require(Hex.decode(secret)))
        let message = try #require(Hex.decode(message))
        #expect(Hex.encode(try privateKey.publicKey().rawRepresentation) == publicHex)
        #expect(Hex.encode(try privateKey.signature(for: message)) == signature)
        #expect(Hex.encode(try privateKey.rawRepresentation()) == secret)

        let publicKey = try Ed25519PublicKey(rawRepresentation: try #require(Hex.decode(publicHex)))
        #expect(publicKey.isValidSignature(try #require(Hex.decode(signature)), for: message))
        #expect(!publicKey.isValidSignature(try #require(Hex.decode(signature)), for: message + [0]))
    }

    /// One key signs from many threads at once (every access token is signed with the same key and its one started
    /// context): each signature is RFC 8032's.
    @Test func ed25519SignsConcurrentlyWithOneKey() async throws {
        let privateKey = try Ed25519PrivateKey(
            rawRepresentation: try #require(
                Hex.decode("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7")))
        let expected =
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
            + "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        let signatures = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask { try (0..<50).map { _ in Hex.encode(try privateKey.signature(for: [0xaf, 0x82])) } }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(signatures.count == 400)
        #expect(signatures.allSatisfy { $0 == expected })
    }

    @Test func ed25519KeysSurvivePEMAndRefuseOtherKeyTypes() throws {
        let key = try Ed25519PrivateKey()
        let restored = try Ed25519PrivateKey(pem: try key.pemRepresentation())
        #expect(try restored.publicKey().rawRepresentation == key.publicKey().rawRepresentation)
        let publicKey = try Ed25519PublicKey(pem: try key.publicKey().pemRepresentation())
        #expect(publicKey.isValidSignature(try key.signature(for: [1, 2, 3]), for: [1, 2, 3]))

        let rsa = #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pem: TestKeys.rsaPEM) }
        #expect(rsa?.reason == .invalidArgument)
        #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pem: "not a key") }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: [1, 2, 3]) }
    }

    @Test func p256SignaturesAreJOSEFormAndVerify() throws {
        let key = try P256PrivateKey()
        let publicKey = try key.publicKey()
        let message = Array("header.claims".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        #expect(publicKey.isValidSignature(signature, for: message))
        #expect(!publicKey.isValidSignature(signature, for: message + [0]))
        #expect(!publicKey.isValidSignature(Array(signature.prefix(63)), for: message))

        let rebuilt = try P256PublicKey(x: publicKey.x, y: publicKey.y)
        #expect(rebuilt.isValidSignature(signature, for: message))
        // A point off the curve is refused when the key is built, not when a token arrives.
        #expect(throws: CryptoError.self) { try P256PublicKey(x: publicKey.x, y: publicKey.x) }
    }

    @Test func p256KeysReadFromPEMMustBeOnP256() throws {
        let key = try P256PrivateKey(pem: TestKeys.p256PEM)
        #expect(try key.publicKey().isValidSignature(try key.signature(for: [7]), for: [7]))
        let rsa = #expect(throws: CryptoError.self) { try P256PrivateKey(pem: TestKeys.rsaPEM) }
        #expect(rsa?.reason == .invalidArgument)
        let p384 = #expect(throws: CryptoError.self) { try P256PrivateKey(pem: TestKeys.p384PEM) }
        #expect(p384?.reason == .invalidArgument)
    }

    @Test func rsaSignaturesVerifyWithTheModulusAndExponent() throws {
        let key = try RSAPrivateKey(pem: TestKeys.rsaPEM)
        let publicKey = try key.publicKey()
        #expect(publicKey.bitCount == 2048)
        #expect(publicKey.exponent == [0x01, 0x00, 0x01])
        let message = Array("header.claims".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 256)
        let rebuilt = try RSAPublicKey(modulus: publicKey.modulus, exponent: publicKey.exponent)
        #expect(rebuilt.isValidSignature(signature, for: message))
        #expect(!rebuilt.isValidSignature(signature, for: message + [0]))
        #expect(throws: CryptoError.self) { try RSAPrivateKey(bits: 1024) }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: TestKeys.p256PEM) }
    }

    /// RFC 7914 §12, the second vector (the first, with N=16, is below what anyone should store).
    @Test func scryptMatchesRFC7914() throws {
        let derived = try Scrypt.derive(
            password: Array("password".utf8), salt: Array("NaCl".utf8), cost: 1024, blockSize: 8, parallelism: 16,
            length: 64)
        #expect(
            Hex.encode(derived)
                == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        )
        let invalid = #expect(throws: CryptoError.self) {
            try Scrypt.derive(password: [], salt: [], cost: 1000, blockSize: 8, parallelism: 1, length: 32)
        }
        #expect(invalid?.reason == .invalidArgument)
    }
}
