import COpenSSL
import Glibc

/// Generates a private CA and leaf certificates for local runs and tests (`ravectl certs --out DIR`).
///
/// Keys are ECDSA P-256, certificates X.509 v3 signed with SHA-256. Each leaf is valid for both server and
/// client authentication, so one pair serves a service's port and its outgoing mTLS connections.
public enum DevelopmentCertificates {
    /// The names `make certs` writes: every service, the gateway, an admin client and a test client.
    public static let projectNames = [
        "gateway", "identity", "social", "leaderboards", "gifts", "push", "wallet", "admin", "client",
    ]

    /// The role a development certificate named `name` carries, as the SAN URI the RPC layer reads
    /// (docs/OPERATIONS.md, "Trust model"): `rave://gateway`, `rave://admin`, `rave://client`, and
    /// `rave://service/<name>` for every other name.
    public static func roleURI(for name: String) -> String {
        switch name {
        case "gateway", "admin", "client": "rave://\(name)"
        default: "rave://service/\(name)"
        }
    }

    /// Writes `ca.pem`/`ca-key.pem` and, per name, `<name>.pem`/`<name>-key.pem` into `directory`.
    ///
    /// Leaves carry CN=<name> and SANs DNS:localhost, DNS:<name>, IP:127.0.0.1, IP:::1 and the role URI of
    /// `roleURI(for:)` (none for the names in `withoutRole`), valid ~825 days. Key files are created with mode
    /// 0600. Calling it with another directory and authority name makes an unrelated CA, which tests use for
    /// "certificate from another CA".
    public static func write(
        to directory: String,
        services: [String] = projectNames,
        withoutRole: Set<String> = [],
        authorityName: String = "Rave Development CA"
    ) throws(TransportError) {
        _ = mkdir(directory, 0o755)
        let authorityKey = try Key()
        let authority = try Certificate(
            subject: authorityName, key: authorityKey, issuer: nil, signer: authorityKey, days: 3650,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        try writeFile("\(directory)/ca.pem", authority.pem(), private: false)
        try writeFile("\(directory)/ca-key.pem", authorityKey.pem(), private: true)
        for name in services {
            let role = withoutRole.contains(name) ? "" : ",URI:\(roleURI(for: name))"
            let key = try Key()
            let leaf = try Certificate(
                subject: name, key: key, issuer: authority, signer: authorityKey, days: 825,
                extensions: [
                    (NID_basic_constraints, "critical,CA:FALSE"),
                    (NID_key_usage, "critical,digitalSignature,keyAgreement"),
                    (NID_ext_key_usage, "serverAuth,clientAuth"),
                    (NID_subject_alt_name, "DNS:localhost,DNS:\(name),IP:127.0.0.1,IP:::1\(role)"),
                    (NID_subject_key_identifier, "hash"),
                    (NID_authority_key_identifier, "keyid"),
                ])
            try writeFile("\(directory)/\(name).pem", leaf.pem(), private: false)
            try writeFile("\(directory)/\(name)-key.pem", key.pem(), private: true)
        }
    }

    private static func writeFile(_ path: String, _ contents: [UInt8], private isPrivate: Bool) throws(TransportError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, isPrivate ? 0o600 : 0o644)
        guard fd >= 0 else { throw failure("open \(path): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        // An existing file keeps its old mode through O_CREAT, so the key's mode is set explicitly.
        if isPrivate { _ = fchmod(fd, 0o600) }
        let written = contents.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == contents.count else { throw failure("write \(path): \(String(cString: strerror(errno)))") }
    }
}

private func failure(_ message: String) -> TransportError {
    var detail = message
    let code = ERR_get_error()
    if code != 0 {
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        detail += ": " + String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    ERR_clear_error()
    return TransportError(.certificateGeneration, detail)
}

/// Drains a memory BIO written by `body` into bytes.
private func pemBytes(_ body: (OpaquePointer) -> Int32) throws(TransportError) -> [UInt8] {
    guard let bio = BIO_new(BIO_s_mem()) else { throw failure("BIO_new") }
    defer { BIO_free(bio) }
    guard body(bio) == 1 else { throw failure("PEM encoding") }
    var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
    let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
    guard read == bytes.count else { throw failure("BIO_read") }
    return bytes
}

/// An ECDSA P-256 key pair.
private final class Key {
    let pointer: OpaquePointer

    init() throws(TransportError) {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw failure("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
            EVP_PKEY_keygen(context, &key) == 1, let key
        else { throw failure("P-256 key generation") }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }

    func pem() throws(TransportError) -> [UInt8] {
        try pemBytes { PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil) }
    }
}

/// An X.509 v3 certificate signed by `signer` (itself when `issuer` is nil).
private final class Certificate {
    let pointer: OpaquePointer

    init(
        subject: String, key: Key, issuer: Certificate?, signer: Key, days: Int,
        extensions: [(Int32, String)]
    ) throws(TransportError) {
        guard let certificate = X509_new() else { throw failure("X509_new") }
        pointer = certificate
        guard let serial = BN_new() else { throw failure("BN_new") }
        defer { BN_free(serial) }
        guard X509_set_version(certificate, 2) == 1,
            BN_rand(serial, 127, 0, 0) == 1,
            BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != nil,
            X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), days * 86_400) != nil,
            X509_set_pubkey(certificate, key.pointer) == 1,
            let name = X509_get_subject_name(certificate),
            X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "Rave Development", -1, -1, 0) == 1,
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, subject, -1, -1, 0) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1
        else { throw failure("certificate fields for \(subject)") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.pointer ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw failure("extension \(value) for \(subject)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(certificate, ext, -1) == 1 else { throw failure("adding extension \(value)") }
        }
        guard X509_sign(certificate, signer.pointer, EVP_sha256()) > 0 else { throw failure("signing \(subject)") }
    }

    deinit { X509_free(pointer) }

    func pem() throws(TransportError) -> [UInt8] {
        try pemBytes { PEM_write_bio_X509($0, pointer) }
    }
}
