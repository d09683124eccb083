import Dispatch
import Glibc
import RaveRPC
import RaveTelemetry
import RaveTransport

/// `ravectl serve-echo`: Health and Echo on one port until SIGTERM or SIGINT, then a graceful drain.
enum ServeEchoCommand {
    static let usage =
        "ravectl serve-echo [--listen 127.0.0.1:7600] --cert FILE --key FILE [--ca FILE (mTLS)] [--loops CORES] [--handlers loop|pool] [--echo sync|async]"

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let options = try Arguments(
            arguments, valueOptions: ["listen", "cert", "key", "ca", "loops", "handlers", "echo"])
        let (host, port) = try parseAddress(options.value("listen") ?? "127.0.0.1:7600")
        let tls = try TLSOptions.server(options)
        let group = try EventLoopGroup(loopCount: try options.integer("loops", default: System.coreCount, in: 1...64))
        let logger = Logger(label: "ravectl.echo")
        var configuration = RPCServerConfiguration(host: host, port: port)
        // A benchmark target: a log line per call would measure the log file, not the protocol.
        configuration.requestLogLevel = .debug
        switch options.value("handlers") ?? "loop" {
        case "loop": configuration.runsHandlersOnEventLoop = true
        case "pool": configuration.runsHandlersOnEventLoop = false
        case let other: throw UsageError("--handlers must be loop or pool, got \(other)")
        }
        // Echo/Echo answered in place by default (`sync`); `async` serves the generated handler on a Task.
        let service: any RPCService
        switch options.value("echo") ?? "sync" {
        case "sync": service = SynchronousEchoService()
        case "async": service = EchoService()
        case let other: throw UsageError("--echo must be sync or async, got \(other)")
        }
        let server = RPCServer(
            configuration: configuration, services: [service], access: .open, tls: tls, group: group, logger: logger)
        try server.start()
        let signal = await TerminationSignal.wait()
        logger.notice("draining", [("signal", String(signal))])
        await server.drain()
        group.shutdown()
        logger.notice("stopped")
        return 0
    }
}

/// Waits for SIGTERM or SIGINT; the default handlers are replaced so the process can drain first.
enum TerminationSignal {
    static func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "ravectl.signals")
            let resumed = SignalOnce(continuation)
            for number in [SIGTERM, SIGINT] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { resumed.fire(number) }
                source.resume()
                resumed.keep(source)
            }
        }
    }
}

/// Resumes its continuation for the first signal only and keeps the signal sources alive.
private final class SignalOnce: @unchecked Sendable {
    // @unchecked: mutated only on the one serial signal queue (and before the sources start).
    private var continuation: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Int32, Never>) {
        self.continuation = continuation
    }

    func keep(_ source: any DispatchSourceSignal) { sources.append(source) }

    func fire(_ number: Int32) {
        continuation?.resume(returning: number)
        continuation = nil
    }
}
