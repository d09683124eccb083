import COpenSSL

/// SHA-256 through OpenSSL's EVP interface.
enum SHA256 {
    /// The digest of `bytes` as 64 lowercase hex digits.
    static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let succeeded = input.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &digest, &length, EVP_sha256(), nil) == 1
        }
        precondition(succeeded && length == 32, "OpenSSL's SHA-256 failed, which only happens when out of memory")
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest.prefix(32) {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
