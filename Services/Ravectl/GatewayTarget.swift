import Glibc
import RaveRPC
import RaveTransport

/// Where `call`, `batch` and `login` send requests, and with which credential.
enum GatewayTarget {
    /// The gateway of `make run` (DESIGN.md §10).
    static let defaultAddress = "127.0.0.1:7443"
    static let valueOptions: Set<String> = [
        "target", "ca", "cert", "key", "server-name", "token", "timeout-ms", "reason",
    ]
    static let usage =
        "[--target HOST:PORT] [--ca FILE] [--cert FILE --key FILE] [--token TOKEN] [--reason TEXT] [--timeout-ms N]"
    static let help = """
            --target defaults to the stored login's gateway, then \(defaultAddress); --token defaults to the
            stored login's access token (ravectl login); --reason is sent as rave-reason (an operator's admin
            writes need one, for the audit log); --timeout-ms defaults to 10000.
        """

    /// Sends one call and returns the response bytes; a failed call throws its `RPCError`.
    static func call(
        method: String, request: [UInt8], options: Arguments, credentials: StoredCredentials?
    ) async throws -> [UInt8] {
        let (host, port) = try parseAddress(options.value("target") ?? credentials?.target ?? defaultAddress)
        let tls = try TLSOptions.client(options)
        var callOptions = CallOptions(
            timeout: .milliseconds(try options.integer("timeout-ms", default: 10_000, in: 1...3_600_000)))
        if let token = options.value("token") ?? credentials?.accessToken, !token.isEmpty {
            callOptions.metadata["authorization"] = "Bearer \(token)"
        }
        if let reason = options.value("reason") { callOptions.metadata[MetadataKey.reason] = reason }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let connection = try await RPCConnection.connect(
            host: host, port: port, tls: tls, serverName: options.value("server-name"), group: group)
        defer { connection.close() }
        return try await connection.call(method: method, request: request, options: callOptions)
    }

    /// All of standard input, or "" when it is a terminal (so a bare `ravectl call M` sends an empty request).
    static func readStandardInput() -> String {
        guard isatty(0) == 0 else { return "" }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
