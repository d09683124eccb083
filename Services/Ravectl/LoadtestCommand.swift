import Foundation
import RaveRPC
import RaveTransport

/// `ravectl loadtest leaderboards`: seeds players and boards, then drives a mix of submits and queries at the
/// leaderboards service over mutual TLS and reports throughput and latency per operation.
enum LoadtestCommand {
    static let usage = """
        ravectl loadtest leaderboards [--target 127.0.0.1:7503] [--ca FILE] [--cert FILE --key FILE] \
        [--app 10ad7e57…] [--users 1000000] [--boards 1] [--database-url URL] \
        [--mix submit=1,position=1,top=1,around=1,friends=0] [--user-choice uniform|zipf[:S]] \
        [--board-choice uniform|zipf[:S]] [--connections 50] [--in-flight 1] [--rate CALLS_PER_S] [--warmup 2] \
        [--duration 10] [--page-size 100] [--adjacent 5] [--loops CORES] [--out .bench/leaderboards.json] \
        [--svg .bench/leaderboards.svg] [--gateway HOST:PORT]
        """
    static let help = """
            Talks to the service directly, as the gateway does: mutual TLS with a service certificate (--cert/--key,
            default .run/certs/gateway.pem) and the caller in request metadata. Without --rate it is a closed loop
            (connections × in-flight calls, each sent when the previous answers); with --rate an open loop at that
            many calls per second in total, latency counted from each call's intended send time.
            With --gateway, each connection signs in a new guest through the gateway (identity GuestLogin) and the
            load runs twice, through the gateway with the guests' tokens and then directly as those guests; both
            results and their ratio are printed (OUT-gateway.json, OUT-direct.json). A guest has no score, so it
            sits last (position, around work; submit does not: guests may not submit).
        """

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        if arguments.first == "bets" { return try await LoadtestBets.run(arguments.dropFirst()) }
        guard arguments.first == "leaderboards" else { throw UsageError("loadtest runs leaderboards or bets") }
        let options = try Arguments(
            arguments.dropFirst(),
            valueOptions: [
                "target", "ca", "cert", "key", "server-name", "app", "users", "boards", "database-url", "mix",
                "user-choice", "board-choice", "connections", "in-flight", "rate", "warmup", "duration", "page-size",
                "adjacent", "loops", "out", "svg", "gateway",
            ])
        let settings = try LoadtestSettings(options)
        let group = try EventLoopGroup(loopCount: try options.integer("loops", default: System.coreCount, in: 1...64))
        defer { group.shutdown() }
        let (host, port) = try parseAddress(settings.target)
        var tlsOptions = options
        if options.value("cert") == nil {
            tlsOptions = try Arguments(
                ArraySlice(
                    ["--cert", ".run/certs/gateway.pem", "--key", ".run/certs/gateway-key.pem"]
                        + (options.value("ca").map { ["--ca", $0] } ?? [])),
                valueOptions: ["cert", "key", "ca"])
        }
        let tls = try TLSOptions.client(tlsOptions)

        // Seeding can take minutes; the load's connections are opened after it so none sits idle meanwhile.
        let seeding = try await RPCConnection.connect(host: host, port: port, tls: tls, group: group)
        let seeder = LoadtestSeeder(
            connection: seeding, app: settings.app, users: settings.users,
            databaseURL: options.value("database-url"), group: group)
        do {
            try await seeder.prepare(boardKeys: settings.boardKeys)
            seeding.close()
        } catch {
            seeding.close()
            throw error
        }
        if let gateway = options.value("gateway") {
            // Clients reach the gateway with server-authenticated TLS only: no client certificate.
            let gatewayTLS = try TLSOptions.client(
                try Arguments(
                    ArraySlice(options.value("ca").map { ["--ca", $0] } ?? []), valueOptions: ["ca"]))
            return try await LoadtestGatewayComparison.run(
                settings: settings, gateway: gateway, gatewayTLS: gatewayTLS, directTLS: tls, group: group,
                out: options.value("out") ?? ".bench/leaderboards.json", svg: options.value("svg"))
        }
        var connections: [RPCConnection] = []
        for _ in 0..<settings.connections {
            connections.append(try await RPCConnection.connect(host: host, port: port, tls: tls, group: group))
        }
        defer { for connection in connections { connection.close() } }

        let plan = try settings.plan(startingAt: monotonicNanoseconds() + 100_000_000)
        let measurements = await measure(connections: connections, plan: plan, settings: settings)
        let report = LoadtestReport(settings: settings, measurements: measurements)
        report.print()
        report.write(json: options.value("out") ?? ".bench/leaderboards.json", svg: options.value("svg"))
        let failed = measurements.errors.values.reduce(0, +)
        return failed == 0 ? 0 : 1
    }

    /// Runs the plan on every connection; `callers` (one per connection), when given, replace the simulated
    /// players' metadata.
    static func measure(
        connections: [RPCConnection], plan: LoadtestPlan, settings: LoadtestSettings,
        callers: [[String: String]]? = nil
    ) async -> LoadtestMeasurements {
        let progress = LoadtestProgress()
        return await withTaskGroup(of: LoadtestMeasurements.self) { group in
            for (number, connection) in connections.enumerated() {
                let load = LoadtestConnection(
                    connection: connection, plan: plan, seed: UInt64(number + 1) &* 0x2545_F491_4F6C_DD1D,
                    progress: progress, caller: callers?[number])
                group.addTask { await load.run() }
            }
            group.addTask {
                try? await Task.sleep(for: .nanoseconds(plan.start - min(plan.start, monotonicNanoseconds())))
                var second = 0
                var last = (0, 0)
                while monotonicNanoseconds() < plan.end {
                    try? await Task.sleep(for: .seconds(1))
                    second += 1
                    let now = (progress.completed.load(ordering: .relaxed), progress.failed.load(ordering: .relaxed))
                    let phase = second <= settings.warmupSeconds ? " (warm-up)" : ""
                    Swift.print("[\(second)s] \(now.0 - last.0) calls/s, \(now.1 - last.1) failed\(phase)")
                    last = now
                }
                return LoadtestMeasurements()
            }
            var total = LoadtestMeasurements()
            for await measurements in group { total.merge(measurements) }
            return total
        }
    }
}

/// The load test's parameters as given on the command line.
struct LoadtestSettings: Sendable {
    /// The application the direct load test plays as: app ids are 32 lowercase hex digits like every Rave ID.
    static let defaultApp = "10ad7e5710ad7e5710ad7e5710ad7e57"

    var target: String
    var app: String
    var users: Int
    var boardKeys: [String]
    var mix: String
    var userChoice: LoadtestChoice
    var boardChoice: LoadtestChoice
    var connections: Int
    var inFlight: Int
    /// Calls per second in total; nil for a closed loop.
    var rate: Int?
    var warmupSeconds: Int
    var durationSeconds: Int
    var pageSize: Int
    var adjacent: Int
    /// Batches of bets instead of the leaderboards mix (`ravectl loadtest bets`).
    var bets: LoadtestBetBatch?

    init(_ options: Arguments) throws(UsageError) {
        target = options.value("target") ?? "127.0.0.1:7503"
        app = options.value("app") ?? LoadtestSettings.defaultApp
        users = try options.integer("users", default: 1_000_000, in: 1...100_000_000)
        let boards = try options.integer("boards", default: 1, in: 1...10_000)
        boardKeys = (1...boards).map { "loadtest-\($0)" }
        mix = options.value("mix") ?? "submit=1,position=1,top=1,around=1"
        userChoice = try LoadtestChoice(options.value("user-choice") ?? "uniform")
        boardChoice = try LoadtestChoice(options.value("board-choice") ?? "uniform")
        connections = try options.integer("connections", default: 50, in: 1...4096)
        inFlight = try options.integer("in-flight", default: 1, in: 1...1024)
        rate = options.value("rate") == nil ? nil : try options.integer("rate", default: 0, in: 1...10_000_000)
        warmupSeconds = try options.integer("warmup", default: 2, in: 0...3600)
        durationSeconds = try options.integer("duration", default: 10, in: 1...86_400)
        pageSize = try options.integer("page-size", default: 100, in: 1...200)
        adjacent = try options.integer("adjacent", default: 5, in: 1...100)
        _ = try LoadtestPlan.weights(mix)
    }

    func plan(startingAt start: UInt64) throws(UsageError) -> LoadtestPlan {
        let measureFrom = start + UInt64(warmupSeconds) * 1_000_000_000
        return LoadtestPlan(
            app: app, boardKeys: boardKeys, users: users,
            cumulativeWeights: bets == nil ? try LoadtestPlan.weights(mix) : [(.bets, 1)],
            userSampler: IndexSampler(count: users, choice: userChoice),
            boardSampler: IndexSampler(count: boardKeys.count, choice: boardChoice),
            ratePerConnection: rate.map { Double($0) / Double(connections) }, inFlight: inFlight,
            pageSize: pageSize, adjacent: adjacent, bets: bets, start: start, measureFrom: measureFrom,
            end: measureFrom + UInt64(durationSeconds) * 1_000_000_000,
            wallClockAtStart: Int64((Date().timeIntervalSince1970 * 1e6).rounded())
                + Int64(start / 1000) - Int64(monotonicNanoseconds() / 1000))
    }
}
