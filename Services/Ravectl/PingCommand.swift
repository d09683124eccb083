import RaveRPC
import RaveServices
import RaveTransport

/// `ravectl ping ADDR`: connects (TLS + protocol handshake), calls Health/Check, and times a PING.
enum PingCommand {
    static let usage = "ravectl ping HOST:PORT [--ca FILE] [--cert FILE --key FILE] [--server-name NAME]"

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let options = try Arguments(arguments, valueOptions: ["ca", "cert", "key", "server-name"])
        guard options.positionals.count == 1 else { throw UsageError("ping takes one HOST:PORT") }
        let (host, port) = try parseAddress(options.positionals[0])
        let tls = try TLSOptions.client(options)
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let started = monotonicNanoseconds()
        let connection = try await RPCConnection.connect(
            host: host, port: port, tls: tls, serverName: options.value("server-name"), group: group)
        let connected = monotonicNanoseconds()
        print("connected to \(host):\(port) in \(milliseconds(connected - started)) ms (TLS + handshake)")
        let health = try await RpcV1.HealthClient(caller: connection).check(RpcV1.HealthCheckRequest())
        print("health: \(health.status)")
        for _ in 0..<3 {
            let roundTrip = try await connection.ping()
            print("ping: \(milliseconds(roundTrip)) ms")
        }
        connection.close()
        return health.status == .serving ? 0 : 1
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return milliseconds(UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000))
    }

    static func milliseconds(_ nanoseconds: UInt64) -> String {
        let hundredths = nanoseconds / 10_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
