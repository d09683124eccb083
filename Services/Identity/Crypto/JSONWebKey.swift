import COpenSSL

// Public keys of OIDC providers (RSA and EC P-256 JWKs) over OpenSSL 3's EVP API. The only file that holds
// those EVP_PKEYs; the rest of the OIDC code sees `JSONWebKey`.

/// A signature algorithm an ID token may use.
///
/// Anything else (none, HS256, PS256, …) is rejected by name.
public enum JSONWebSignatureAlgorithm: String, Sendable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (Google, Facebook, Apple).
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256; the JOSE signature is raw r||s, 64 bytes.
    case es256 = "ES256"
}

/// A provider's verification key, read from one entry of its JWKS (RFC 7517/7518).
final class JSONWebKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after init, and OpenSSL allows concurrent verification with one key.
    private let key: OpaquePointer

    /// The key id tokens name in their `kid` header.
    let keyID: String
    /// The only algorithm this key verifies, from its type (and its `alg` member when present).
    let algorithm: JSONWebSignatureAlgorithm

    deinit {
        EVP_PKEY_free(key)
    }

    /// Builds a key from a JWK's members: `kty` RSA with `n`/`e`, or `kty` EC with `crv` P-256 and `x`/`y`.
    init(keyID: String, members: [String: String]) throws(CryptoError) {
        self.keyID = keyID
        switch members["kty"] {
        case "RSA":
            guard let modulus = members["n"].flatMap(Base64URL.decode),
                let exponent = members["e"].flatMap(Base64URL.decode),
                !modulus.isEmpty, !exponent.isEmpty
            else {
                throw .configuration("RSA JWK \(keyID) needs base64url n and e")
            }
            key = try makeRSAKey(modulus: modulus, exponent: exponent, keyID: keyID)
            algorithm = .rs256
        case "EC":
            guard members["crv"] == "P-256" else {
                throw .configuration("EC JWK \(keyID) must use curve P-256, got \(members["crv"] ?? "none")")
            }
            guard let x = members["x"].flatMap(Base64URL.decode), let y = members["y"].flatMap(Base64URL.decode),
                x.count == 32, y.count == 32
            else {
                throw .configuration("EC JWK \(keyID) needs 32-byte base64url x and y")
            }
            key = try makeP256Key(point: [0x04] + x + y, keyID: keyID)
            algorithm = .es256
        default:
            throw .configuration("JWK \(keyID) has unsupported kty \(members["kty"] ?? "none"); RSA and EC are allowed")
        }
        if let declared = members["alg"], declared != algorithm.rawValue {
            EVP_PKEY_free(key)
            throw .configuration(
                "JWK \(keyID) declares alg \(declared) but its key type verifies \(algorithm.rawValue)")
        }
    }

    /// True when `signature` (JOSE form) over `message` is valid for this key under `algorithm`.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: JSONWebSignatureAlgorithm) -> Bool {
        guard algorithm == self.algorithm else { return false }
        let der: [UInt8]
        switch algorithm {
        case .rs256: der = signature
        case .es256:
            guard let converted = derSignature(fromRawP256: signature) else { return false }
            der = converted
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let status = message.withUnsafeBufferPointer { messageBuffer in
            der.withUnsafeBufferPointer { signatureBuffer in
                guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return Int32(0) }
                return EVP_DigestVerify(
                    context, signatureBuffer.baseAddress, signatureBuffer.count, messageBuffer.baseAddress,
                    messageBuffer.count)
            }
        }
        if status != 1 { ERR_clear_error() }
        return status == 1
    }
}

// MARK: - Key construction

// EVP_PKEY_PUBLIC_KEY is a compound macro Swift cannot import; these are its parts.
private let publicKeySelection = Int32(
    OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

/// Smaller RSA keys are refused: every provider we accept publishes 2048-bit keys or larger.
private let minimumRSABits: Int32 = 2048

private func makeRSAKey(modulus: [UInt8], exponent: [UInt8], keyID: String) throws(CryptoError) -> OpaquePointer {
    // OSSL_PARAM_construct_BN takes native-endian magnitudes; JWK carries big-endian ones.
    var modulusNative = Array(modulus.reversed())
    var exponentNative = Array(exponent.reversed())
    let key: OpaquePointer? = "n".withCString { nName in
        "e".withCString { eName in
            modulusNative.withUnsafeMutableBytes { modulusBuffer in
                exponentNative.withUnsafeMutableBytes { exponentBuffer in
                    var parameters = [
                        OSSL_PARAM_construct_BN(nName, modulusBuffer.baseAddress, modulusBuffer.count),
                        OSSL_PARAM_construct_BN(eName, exponentBuffer.baseAddress, exponentBuffer.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    return keyFromData(typeName: "RSA", parameters: &parameters)
                }
            }
        }
    }
    guard let key else { throw .configuration("RSA JWK \(keyID) is not a valid key: \(openSSLErrorDescription())") }
    guard EVP_PKEY_get_bits(key) >= minimumRSABits else {
        EVP_PKEY_free(key)
        throw .configuration("RSA JWK \(keyID) is shorter than \(minimumRSABits) bits")
    }
    return key
}

private func makeP256Key(point: [UInt8], keyID: String) throws(CryptoError) -> OpaquePointer {
    var curveName = Array("prime256v1".utf8CString)
    var pointBytes = point
    let key: OpaquePointer? = "group".withCString { groupName in
        "pub".withCString { publicName in
            curveName.withUnsafeMutableBufferPointer { curveBuffer in
                pointBytes.withUnsafeMutableBytes { pointBuffer in
                    var parameters = [
                        OSSL_PARAM_construct_utf8_string(groupName, curveBuffer.baseAddress, 0),
                        OSSL_PARAM_construct_octet_string(publicName, pointBuffer.baseAddress, pointBuffer.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    return keyFromData(typeName: "EC", parameters: &parameters)
                }
            }
        }
    }
    // OpenSSL checks that the point is on the curve while importing it.
    guard let key else {
        throw .configuration("EC JWK \(keyID) is not a valid P-256 key: \(openSSLErrorDescription())")
    }
    return key
}

private func keyFromData(typeName: String, parameters: inout [OSSL_PARAM]) -> OpaquePointer? {
    guard let context = EVP_PKEY_CTX_new_from_name(nil, typeName, nil) else { return nil }
    defer { EVP_PKEY_CTX_free(context) }
    var key: OpaquePointer?
    guard EVP_PKEY_fromdata_init(context) == 1,
        parameters.withUnsafeMutableBufferPointer({
            EVP_PKEY_fromdata(context, &key, publicKeySelection, $0.baseAddress)
        })
            == 1
    else {
        return nil
    }
    return key
}

// MARK: - ECDSA signature form

/// Converts a JOSE ES256 signature (r||s, 32 bytes each) to the DER ECDSA-Sig-Value OpenSSL verifies.
private func derSignature(fromRawP256 raw: [UInt8]) -> [UInt8]? {
    guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
    defer { ECDSA_SIG_free(signature) }
    let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
    let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
    guard let r, let s else {
        BN_free(r)
        BN_free(s)
        return nil
    }
    guard ECDSA_SIG_set0(signature, r, s) == 1 else {
        BN_free(r)
        BN_free(s)
        return nil
    }
    let length = i2d_ECDSA_SIG(signature, nil)
    guard length > 0 else { return nil }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor = buffer.baseAddress
        return i2d_ECDSA_SIG(signature, &cursor)
    }
    return written == length ? der : nil
}
