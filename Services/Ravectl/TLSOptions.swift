import Glibc
import RaveTransport

/// The TLS options shared by ravectl's commands.
enum TLSOptions {
    static let defaultCAPath = ".run/certs/ca.pem"

    /// A client context: trusts `--ca` (default `.run/certs/ca.pem`), presents `--cert`/`--key` when given.
    static func client(_ arguments: Arguments) throws -> TLSContext {
        let ca = arguments.value("ca") ?? defaultCAPath
        guard access(ca, R_OK) == 0 else {
            throw UsageError("cannot read the CA certificate \(ca); pass --ca FILE (make certs writes one)")
        }
        let cert = arguments.value("cert")
        let key = arguments.value("key")
        guard (cert == nil) == (key == nil) else { throw UsageError("--cert and --key go together") }
        return try TLSContext(
            .client(
                trustRootsPath: ca, certificateChainPath: cert, privateKeyPath: key,
                serverName: arguments.value("server-name")))
    }

    /// A server context from `--cert`/`--key`; with `--ca`, client certificates of that CA are required.
    static func server(_ arguments: Arguments) throws -> TLSContext {
        let ca = arguments.value("ca")
        return try TLSContext(
            .server(
                certificateChainPath: try arguments.required("cert"), privateKeyPath: try arguments.required("key"),
                trustRootsPath: ca, requireClientCertificate: ca != nil))
    }
}
