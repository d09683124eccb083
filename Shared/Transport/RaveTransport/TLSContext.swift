import COpenSSL
import CRaveTLS
import Synchronization

/// A TLS configuration loaded into OpenSSL (an `SSL_CTX`), shared by every connection that uses it.
///
/// `reload()` re-reads certificates, key and CA from disk (on SIGHUP): connections made afterwards use the new
/// files, established ones keep theirs.
public final class TLSContext: Sendable {
    public let configuration: TLSConfiguration
    private let current: Mutex<ContextBox>

    /// Loads `configuration`; throws `.tlsConfiguration` when a file is missing or the key doesn't match.
    public init(_ configuration: TLSConfiguration) throws(TransportError) {
        self.configuration = configuration
        current = Mutex(try ContextBox(configuration))
    }

    /// Re-reads the configured files; on failure the previous certificates stay in use.
    public func reload() throws(TransportError) {
        let fresh = try ContextBox(configuration)
        current.withLock { $0 = fresh }
    }

    /// A session for one connection on `fd`, verifying the server against `serverName` on the client side.
    func makeSession(fd: Int32, serverName: String?) throws(TransportError) -> TLSSession {
        let box = current.withLock { $0 }
        guard let ssl = SSL_new(box.pointer) else { throw .tlsConfiguration("SSL_new: \(takeErrorText())") }
        let session = TLSSession(ssl: ssl)
        guard SSL_set_fd(ssl, fd) == 1 else { throw .tlsConfiguration("SSL_set_fd: \(takeErrorText())") }
        switch configuration.role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            if let host = serverName ?? configuration.serverName {
                guard rave_ssl_set_expected_host(ssl, host) == 1 else {
                    throw .tlsConfiguration("cannot verify against host '\(host)': \(takeErrorText())")
                }
                // SNI carries names only; RFC 6066 forbids IP literals there.
                if !host.contains(":"), !host.allSatisfy({ $0 == "." || $0.isNumber }) {
                    _ = rave_ssl_set_sni(ssl, host)
                }
            }
        }
        return session
    }
}

/// Owns one `SSL_CTX`; a reload swaps the box, and sessions keep the context alive through OpenSSL's refcount.
private final class ContextBox: Sendable {
    // nonisolated(unsafe): the SSL_CTX is immutable after init and OpenSSL makes SSL_new on it thread-safe.
    nonisolated(unsafe) let pointer: OpaquePointer

    init(_ configuration: TLSConfiguration) throws(TransportError) {
        let method = configuration.role == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else {
            throw .tlsConfiguration("SSL_CTX_new: \(takeErrorText())")
        }
        pointer = context
        _ = rave_ssl_ctx_set_min_tls12(context)
        // TLS 1.2 offers forward-secret AEAD suites only (no CBC, no RSA key exchange); TLS 1.3's are all AEAD.
        guard configuration.offersOnlyTLS11ForTesting || rave_ssl_ctx_set_tls12_aead_only(context) == 1 else {
            throw .tlsConfiguration("TLS 1.2 cipher suites: \(takeErrorText())")
        }
        if let suites = configuration.offersOnlyTLS12ForTesting {
            _ = rave_ssl_ctx_set_max_tls(context, rave_tls1_2_version())
            guard SSL_CTX_set_cipher_list(context, suites) == 1 else {
                throw .tlsConfiguration("cipher suites \(suites): \(takeErrorText())")
            }
        }
        if configuration.minimumVersion == .tls13 {
            _ = rave_ssl_ctx_set_min_tls(context, rave_tls1_3_version())
        }
        if configuration.offersOnlyTLS11ForTesting {
            // OpenSSL 3 refuses TLS 1.1 above security level 0, so lower it or the client never says hello.
            _ = rave_ssl_ctx_set_min_tls(context, rave_tls1_1_version())
            _ = rave_ssl_ctx_set_max_tls(context, rave_tls1_1_version())
            SSL_CTX_set_security_level(context, 0)
            _ = SSL_CTX_set_cipher_list(context, "DEFAULT:@SECLEVEL=0")
        }
        _ = rave_ssl_ctx_set_mode_defaults(context)
        // Read-ahead lets one read(2) fetch whole records (and several of them) instead of a 5-byte header
        // read plus a body read per record. Kept buffers: releasing them when drained made every call on a
        // busy connection malloc and free two 17 KiB buffers; the price is ~34 KiB per open connection.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_READ_AHEAD, 1, nil)
        _ = SSL_CTX_ctrl(context, SSL_CTRL_CLEAR_MODE, Int(SSL_MODE_RELEASE_BUFFERS), nil)
        if let chain = configuration.certificateChainPath {
            guard SSL_CTX_use_certificate_chain_file(context, chain) == 1 else {
                throw .tlsConfiguration("certificate chain \(chain): \(takeErrorText())")
            }
        }
        if let key = configuration.privateKeyPath {
            guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1,
                SSL_CTX_check_private_key(context) == 1
            else { throw .tlsConfiguration("private key \(key): \(takeErrorText())") }
        }
        if let roots = configuration.trustRootsPath {
            guard SSL_CTX_load_verify_locations(context, roots, nil) == 1 else {
                throw .tlsConfiguration("trust roots \(roots): \(takeErrorText())")
            }
        }
        if !configuration.applicationProtocols.isEmpty {
            try Self.setApplicationProtocols(configuration.applicationProtocols, role: configuration.role, on: context)
        }
        switch configuration.role {
        case .client:
            _ = rave_ssl_ctx_set_verify_peer(context, 1)
        case .server where configuration.requireClientCertificate || configuration.requestClientCertificate:
            guard let roots = configuration.trustRootsPath else {
                throw .tlsConfiguration("a client certificate check needs trustRootsPath (the CA of clients)")
            }
            if let names = SSL_load_client_CA_file(roots) { SSL_CTX_set_client_CA_list(context, names) }
            _ = rave_ssl_ctx_set_verify_peer(context, configuration.requireClientCertificate ? 1 : 0)
        case .server:
            break
        }
        ERR_clear_error()
    }

    deinit { SSL_CTX_free(pointer) }

    /// Sets ALPN: the protocols a server selects from, or those a client offers.
    private static func setApplicationProtocols(
        _ protocols: [String], role: TLSConfiguration.Role, on context: OpaquePointer
    ) throws(TransportError) {
        var wire: [UInt8] = []
        for name in protocols {
            guard (1...255).contains(name.utf8.count) else {
                throw .tlsConfiguration("ALPN protocol name \"\(name)\" must be 1…255 bytes")
            }
            wire.append(UInt8(name.utf8.count))
            wire.append(contentsOf: name.utf8)
        }
        let applied =
            switch role {
            case .server: rave_ssl_ctx_set_alpn_server(context, wire, UInt32(wire.count)) == 1
            // SSL_CTX_set_alpn_protos returns 0 on success.
            case .client: SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0
            }
        guard applied else { throw .tlsConfiguration("ALPN \(protocols): \(takeErrorText())") }
    }
}

/// The outcome of one non-blocking TLS operation.
enum TLSResult {
    /// The handshake finished, or this many bytes were read or written.
    case done(Int)
    case wantRead
    case wantWrite
    /// The peer sent close_notify.
    case closed
    case failed(TransportError)
}

/// One connection's `SSL`; used only on its channel's loop.
final class TLSSession {
    private let ssl: OpaquePointer

    fileprivate init(ssl: OpaquePointer) { self.ssl = ssl }

    deinit { SSL_free(ssl) }

    func handshake() -> TLSResult {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done(0) }
        switch classify(result) {
        case .closed:
            return .failed(.tlsHandshakeFailed("peer closed the connection during the handshake"))
        case .failed(let error):
            let reason = [verificationText(), error.message].compactMap { $0 }.filter { !$0.isEmpty }
            return .failed(
                .tlsHandshakeFailed(reason.isEmpty ? "peer closed the connection" : reason.joined(separator: "; ")))
        case let other:
            return other
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSResult {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        return result > 0 ? .done(Int(result)) : classify(result)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TLSResult {
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        return result > 0 ? .done(Int(result)) : classify(result)
    }

    /// Whether OpenSSL holds bytes already read from the socket (a record, or part of one) not yet returned.
    var hasBufferedInput: Bool { SSL_has_pending(ssl) == 1 }

    /// Sends close_notify without waiting for the peer's.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The verified peer certificate's names, if the peer sent a certificate that verified.
    var peerCertificate: PeerCertificate? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard SSL_get_verify_result(ssl) == Int(X509_V_OK), let name = X509_get_subject_name(certificate) else {
            return nil
        }
        var text = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &text, Int32(text.count))
        let commonName =
            length >= 0 ? String(decoding: text[0..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        var uris = [CChar](repeating: 0, count: 4096)
        let written = rave_x509_san_uris(certificate, &uris, Int32(uris.count))
        // A certificate whose URIs do not fit is given none: a role is never read from a truncated list.
        let list =
            written > 0
            ? String(decoding: uris[0..<Int(written)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .split(separator: "\n").map(String.init)
            : []
        return PeerCertificate(commonName: commonName, uris: list)
    }

    /// The protocol ALPN selected ("http/1.1", "h2"), nil when none was.
    var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// "TLSv1.3" or "TLSv1.2".
    var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The negotiated cipher suite's OpenSSL name ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256").
    var cipherSuite: String? {
        guard let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    private func classify(_ result: Int32) -> TLSResult {
        let code = SSL_get_error(ssl, result)
        switch code {
        case rave_ssl_error_want_read(): return .wantRead
        case rave_ssl_error_want_write(): return .wantWrite
        case rave_ssl_error_zero_return(): return .closed
        case rave_ssl_error_syscall():
            let text = takeErrorText()
            return .failed(
                TransportError(.connectionReset, text.isEmpty ? "connection closed without close_notify" : text))
        default:
            return .failed(.tlsFailure(takeErrorText()))
        }
    }

    private func verificationText() -> String? {
        let result = SSL_get_verify_result(ssl)
        guard result != Int(X509_V_OK) else { return nil }
        return "certificate verification: " + String(cString: X509_verify_cert_error_string(result))
    }
}

/// Drains OpenSSL's thread-local error queue into one readable line.
private func takeErrorText() -> String {
    var messages: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        messages.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.joined(separator: "; ")
}
