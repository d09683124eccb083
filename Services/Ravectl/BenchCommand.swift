import Foundation
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

/// `ravectl bench rpc`: a closed-loop load test of Echo/Echo with a latency histogram.
enum BenchCommand {
    static let usage = """
        ravectl bench rpc [--target HOST:PORT] [--connections 16] [--in-flight 64] [--duration 10] \
        [--payload 32] [--loops CORES] [--client callbacks|tasks] [--ca FILE] [--cert FILE --key FILE] \
        [--out .bench/rpc.json]
        """

    struct Parameters {
        var target: String
        var connections: Int
        var inFlight: Int
        var seconds: Int
        var payloadSize: Int
        /// Tasks awaiting the typed client (`tasks`) or loop callbacks (`callbacks`, the leaner default).
        var client: String
    }

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        if arguments.first == "postgres" { return try await BenchPostgresCommand.run(arguments.dropFirst()) }
        guard arguments.first == "rpc" else { throw UsageError("bench knows two benchmarks: rpc and postgres") }
        let options = try Arguments(
            arguments.dropFirst(),
            valueOptions: [
                "target", "connections", "in-flight", "duration", "payload", "ca", "cert", "key", "server-name", "out",
                "loops", "client",
            ])
        var parameters = Parameters(
            target: options.value("target") ?? "in-process",
            connections: try options.integer("connections", default: 16, in: 1...1024),
            inFlight: try options.integer("in-flight", default: 64, in: 1...4096),
            seconds: try options.integer("duration", default: 10, in: 1...3600),
            payloadSize: try options.integer("payload", default: 32, in: 0...1_048_576),
            client: options.value("client") ?? "callbacks")
        guard ["callbacks", "tasks"].contains(parameters.client) else {
            throw UsageError("--client must be callbacks or tasks, got \(parameters.client)")
        }
        let group = try EventLoopGroup(loopCount: try options.integer("loops", default: System.coreCount, in: 1...64))
        defer { group.shutdown() }

        var server: RPCServer?
        let host: String
        let port: Int
        let tls: TLSContext
        if let target = options.value("target") {
            (host, port) = try parseAddress(target)
            tls = try TLSOptions.client(options)
        } else {
            let local = try await startLocalServer(group: group)
            server = local.server
            (host, port, tls) = ("127.0.0.1", local.server.localPort, local.clientTLS)
            parameters.target = "in-process 127.0.0.1:\(port)"
        }

        var connections: [RPCConnection] = []
        for _ in 0..<parameters.connections {
            connections.append(try await RPCConnection.connect(host: host, port: port, tls: tls, group: group))
        }
        let result = await measure(connections: connections, parameters: parameters)
        for connection in connections { connection.close() }
        await server?.shutdown()
        report(result, parameters: parameters, path: options.value("out") ?? ".bench/rpc.json")
        return result.errors == 0 ? 0 : 1
    }

    struct Result {
        var histogram = LatencyHistogram()
        var errors = 0
        var elapsedNanoseconds: UInt64 = 0
    }

    private static func measure(connections: [RPCConnection], parameters: Parameters) async -> Result {
        let completed = CallCounter()
        let started = monotonicNanoseconds()
        let end = started + UInt64(parameters.seconds) * 1_000_000_000
        let payload = [UInt8](repeating: 0x5A, count: parameters.payloadSize)
        let request = EchoV1.EchoRequest(payload: payload)
        return await withTaskGroup(of: (LatencyHistogram, Int).self) { group in
            for connection in connections where parameters.client == "callbacks" {
                let load = ConnectionLoad(connection: connection, payload: payload, end: end, completed: completed)
                group.addTask { await load.run(chains: parameters.inFlight) }
            }
            for connection in connections where parameters.client == "tasks" {
                let client = EchoV1.EchoClient(caller: connection)
                for _ in 0..<parameters.inFlight {
                    // On the connection's loop a call starts and completes without waking another thread, so
                    // the load generator costs the shared cores as little as it can.
                    group.addTask(executorPreference: connection.eventLoop) {
                        var histogram = LatencyHistogram()
                        var errors = 0
                        var unreported = 0
                        defer { completed.value.add(unreported, ordering: .relaxed) }
                        while true {
                            let before = monotonicNanoseconds()
                            guard before < end else { break }
                            do {
                                _ = try await client.echo(request)
                                histogram.record(microseconds: (monotonicNanoseconds() - before) / 1000)
                            } catch {
                                errors += 1
                            }
                            unreported += 1
                            if unreported == 64 {
                                completed.value.add(unreported, ordering: .relaxed)
                                unreported = 0
                            }
                        }
                        return (histogram, errors)
                    }
                }
            }
            group.addTask {
                var last = 0
                var second = 0
                while monotonicNanoseconds() < end {
                    try? await Task.sleep(for: .seconds(1))
                    second += 1
                    let now = completed.value.load(ordering: .relaxed)
                    print("[\(second)s] \(now - last) calls/s, \(now) total")
                    last = now
                }
                return (LatencyHistogram(), 0)
            }
            var result = Result()
            for await (histogram, errors) in group {
                result.histogram.merge(histogram)
                result.errors += errors
            }
            result.elapsedNanoseconds = monotonicNanoseconds() - started
            return result
        }
    }

    private static func report(_ result: Result, parameters: Parameters, path: String) {
        let seconds = Double(result.elapsedNanoseconds) / 1e9
        let throughput = Double(result.histogram.total) / seconds
        let quantiles: [(String, Double)] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)]
        let values = quantiles.map { ($0.0, result.histogram.value(atQuantile: $0.1)) }
        print("")
        print(
            "rpc echo: \(parameters.connections) connections × \(parameters.inFlight) in flight, "
                + "\(parameters.payloadSize)-byte payload, \(parameters.target)")
        print("  calls: \(result.histogram.total) ok, \(result.errors) failed in \(String(format: "%.1f", seconds)) s")
        print("  throughput: \(Int(throughput)) calls/s")
        print(
            "  latency µs: " + values.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
                + " max=\(result.histogram.maximum)")
        let json = """
            {"benchmark": "rpc", "throughput_calls_per_second": \(Int(throughput)), \
            "calls": \(result.histogram.total), "errors": \(result.errors), "seconds": \(seconds), \
            "latency_us": {\(values.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ")), \
            "max": \(result.histogram.maximum)}, \
            "parameters": {"target": "\(parameters.target)", "connections": \(parameters.connections), \
            "in_flight": \(parameters.inFlight), "client": "\(parameters.client)", "duration_s": \(parameters.seconds), \
            "payload_bytes": \(parameters.payloadSize)}}

            """
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            // Written in place, not replaced by a rename: `--out /dev/null` must stay a device.
            try Data(json.utf8).write(to: url)
            print("  results: \(path)")
        } catch {
            print("  cannot write \(path): \(error)")
        }
    }

    /// An echo server on an ephemeral port with fresh development certificates, for `make bench`.
    private static func startLocalServer(
        group: EventLoopGroup
    ) async throws -> (server: RPCServer, clientTLS: TLSContext) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ravectl-bench-\(getpid())").path
        try DevelopmentCertificates.write(to: directory, services: ["echo"])
        let serverTLS = try TLSContext(
            .server(certificateChainPath: directory + "/echo.pem", privateKeyPath: directory + "/echo-key.pem"))
        let clientTLS = try TLSContext(.client(trustRootsPath: directory + "/ca.pem"))
        var configuration = RPCServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.requestLogLevel = .debug
        // The load's first calls may be large (--payload up to 1 MiB): no early frame limit for this own server.
        configuration.earlyMaxFrameSize = configuration.maxFrameSize
        let server = RPCServer(
            configuration: configuration, services: [EchoService()], access: .open, tls: serverTLS, group: group,
            logger: Logger(label: "bench.server", level: .warning))
        try server.start()
        return (server, clientTLS)
    }
}
