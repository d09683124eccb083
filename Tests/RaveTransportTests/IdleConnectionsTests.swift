import Foundation
import RaveTransport
import Synchronization
import Testing

@testable import RaveTestSupport

/// Ten thousand TLS connections that handshake and then sit idle leave the server serving new connections.
///
/// The idle clients live in a Python child process (asyncio + ssl, real TLS over loopback): this process
/// then holds only the server's side of each connection, which leaves file descriptors for the tests
/// running next to this one in the same process.
@Suite("Idle connections", .timeLimit(.minutes(2)))
struct IdleConnectionsTests {
    static let wantedConnections = 10_000
    /// Descriptors left for everything else in the test process (other tests run in parallel).
    static let reservedDescriptors = 1_024

    @Test func tenThousandIdleTLSConnectionsLeaveTheServerResponsive() async throws {
        let count = Self.connectionCountTheDescriptorLimitAllows()
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let counts = ConnectionCounts()
        let listener = try makeListener(group: group, tls: try certificates.server()) { CountingEchoHandler(counts) }
        defer { listener.close() }

        let started = ContinuousClock.now
        let clients = try IdleClientProcess.start(
            port: listener.localPort, count: count, concurrency: 64, caPath: "\(certificates.ours)/ca.pem")
        defer { clients.stop() }
        let report = try await clients.waitUntilOpen(within: .seconds(90))
        #expect(report == "open \(count) failed 0", "the idle clients reported: \(report)")
        #expect(await eventually(within: 20) { counts.active.load(ordering: .relaxed) >= count })
        let handshakes = ContinuousClock.now - started

        // A fresh connection, handshake included, gets its echo while the others are open (how fast is `make bench`'s
        // business: the time is printed, not asserted).
        var slowest = Duration.zero
        for round in 0..<5 {
            let roundStarted = ContinuousClock.now
            let recorder = RecordingHandler()
            let channel = try await Connector.connect(
                to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
                handler: recorder)
            let message = Array("ping \(round)".utf8)
            await onLoop(channel) {
                $0.write(message)
                $0.flush()
            }
            #expect(await eventually(within: 5) { recorder.snapshot.received == message })
            slowest = max(slowest, ContinuousClock.now - roundStarted)
            await onLoop(channel) { $0.close() }
        }
        #expect(counts.closed.load(ordering: .relaxed) <= 5, "idle connections were dropped")

        clients.stop()
        #expect(await eventually(within: 30) { counts.closed.load(ordering: .relaxed) >= count + 5 })
        print("IdleConnectionsTests: \(count) handshakes in \(handshakes); slowest fresh echo \(slowest)")
    }

    /// The number of connections to open: 10,000, or fewer with a message when RLIMIT_NOFILE can't fit them.
    static func connectionCountTheDescriptorLimitAllows() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let wanted = rlim_t(wantedConnections + reservedDescriptors)
        if limit.rlim_cur < wanted {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let allowed = Int(limit.rlim_cur) - reservedDescriptors
        guard allowed < wantedConnections else { return wantedConnections }
        print(
            "IdleConnectionsTests: RLIMIT_NOFILE allows \(limit.rlim_cur) descriptors (hard \(limit.rlim_max)), "
                + "so only \(allowed) idle connections instead of \(wantedConnections); raise `ulimit -n` for all")
        return max(allowed, 100)
    }
}

/// Counts connections that became active and that closed, across every loop.
private final class ConnectionCounts: Sendable {
    let active = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
}

/// Echoes like `EchoHandler` and counts its connection's life.
private final class CountingEchoHandler: ChannelHandler {
    private let counts: ConnectionCounts

    init(_ counts: ConnectionCounts) { self.counts = counts }

    func channelActive(_ channel: Channel) { counts.active.add(1, ordering: .relaxed) }
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) { channel.write(bytes) }
    func channelReadComplete(_ channel: Channel) { channel.flush() }
    func channelInactive(_ channel: Channel, error: TransportError?) { counts.closed.add(1, ordering: .relaxed) }
}

/// A Python process that opens `count` TLS connections, `concurrency` handshakes at a time, reports
/// "open N failed M" on standard output, and holds the connections until its standard input closes.
private final class IdleClientProcess: Sendable {
    private let process: ChildProcess
    private let outputPath: String

    static let script = """
        import asyncio, resource, ssl, sys

        async def main(port, count, concurrency, ca_path):
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 256)), hard))
            context = ssl.create_default_context(cafile=ca_path)
            gate = asyncio.Semaphore(concurrency)
            writers, failures = [], []

            async def open_one():
                async with gate:
                    error = None
                    for _ in range(3):
                        try:
                            connecting = asyncio.open_connection(
                                "127.0.0.1", port, ssl=context, server_hostname="localhost")
                            writers.append((await asyncio.wait_for(connecting, 20))[1])
                            return
                        except Exception as caught:
                            error = caught
                    failures.append(repr(error))

            await asyncio.gather(*(open_one() for _ in range(count)))
            print(f"open {len(writers)} failed {len(failures)}", *failures[:3], flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

        asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
        """

    private init(process: ChildProcess, outputPath: String) {
        self.process = process
        self.outputPath = outputPath
    }

    static func start(port: Int, count: Int, concurrency: Int, caPath: String) throws -> IdleClientProcess {
        let outputPath = NSTemporaryDirectory() + "rave-idle-clients-\(UUID().uuidString).out"
        let process = try ChildProcess.start(
            "/usr/bin/python3", ["-c", script, String(port), String(count), String(concurrency), caPath],
            input: .pipe, output: .file(outputPath), errors: .standardOutput)
        return IdleClientProcess(process: process, outputPath: outputPath)
    }

    private var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// The process's report once every connection is open (or failed).
    func waitUntilOpen(within limit: Duration) async throws -> String {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let text = output
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("open ") }) {
                return String(line)
            }
            guard process.isRunning else { return "the client process exited early: \(text)" }
            try await Task.sleep(for: .milliseconds(50))
        }
        return "the clients did not finish connecting within \(limit): \(output)"
    }

    /// Closes the clients' standard input so they exit, and waits briefly; kills them if they linger.
    func stop() {
        process.closeInput()
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
        process.kill()
        try? FileManager.default.removeItem(atPath: outputPath)
    }
}
