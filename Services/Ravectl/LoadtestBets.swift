import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTransport

/// The batch each `.bets` call of the load test sends: `size` PlaceBet calls of one game through the gateway's
/// Batch, each with a bet id no other bet has, so every bet is a new durable write to the wallet.
struct LoadtestBetBatch: Sendable {
    var size = 50
    var gameID = "loadtest-dice"
    var currency = "LOAD"
    var wager = "1.00"

    func request(_ random: inout SplitMix64) -> [UInt8] {
        let calls = (0..<size).map { index in
            let betID = RaveID(high: random.next(), low: random.next()).hex
            let bet = WalletV1.Bet(
                gameId: gameID, betId: betID, wager: wager, currency: currency, economy: .sandbox,
                clientSeed: "loadtest")
            return GatewayV1.BatchCall(
                name: "bet-\(index)", method: "rave.wallet.v1.Wallet/PlaceBet",
                request: WalletV1.PlaceBetRequest(bet: bet).protobufBytes())
        }
        return GatewayV1.BatchRequest(calls: calls).protobufBytes()
    }

    /// The first failed bet of a batch's response, as the batch's failure; nil when every bet succeeded.
    static func failure(in response: [UInt8]) -> RPCError? {
        guard let batch = try? GatewayV1.BatchResponse(protobufBytes: response) else {
            return RPCError(.internal, "the batch's response does not decode")
        }
        guard let failed = batch.results.first(where: { $0.code != .ok }) else { return nil }
        return RPCError(failed.code, "\(failed.name): \(failed.message)")
    }
}

/// `ravectl loadtest bets`: guests placing batches of bets through the gateway into the real wallet.
enum LoadtestBets {
    static let usage = """
        ravectl loadtest bets --gateway HOST:PORT --app APP_ID [--ca FILE] [--admin-cert FILE --admin-key FILE] \
        [--batch 50] [--connections 50] [--in-flight 1] [--rate BATCHES_PER_S] [--warmup 2] [--duration 10] \
        [--loops CORES] [--out .bench/bets.json] [--svg .bench/bets.svg]
        """
    static let help = """
            Each connection signs in a new guest of APP_ID through the gateway (identity GuestLogin); with the admin
            certificate (default .run/certs/admin.pem) the currency LOAD and the dice game loadtest-dice (odds 3 in
            6, paying 2×) are created if missing and every guest gets a sandbox deposit. Then each connection sends
            batches (rave.gateway.v1.Gateway/Batch) of --batch PlaceBet calls of 1.00 LOAD, closed loop or open at
            --rate batches per second in total, and the bets per second, batches per second and batch latencies
            are printed and written. A batch counts as failed when any of its bets failed.
        """

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let options = try Arguments(
            arguments,
            valueOptions: [
                "gateway", "app", "ca", "admin-cert", "admin-key", "batch", "connections", "in-flight", "rate",
                "warmup", "duration", "loops", "out", "svg",
            ])
        let gateway = try options.required("gateway")
        let app = try options.required("app")
        var bets = LoadtestBetBatch()
        bets.size = try options.integer("batch", default: 50, in: 1...50)
        var settings = try LoadtestSettings(
            Arguments(
                ArraySlice(
                    ["--target", gateway, "--app", app]
                        + ["connections", "in-flight", "rate", "warmup", "duration"].flatMap { name in
                            options.value(name).map { ["--\(name)", $0] } ?? []
                        }),
                valueOptions: ["target", "app", "connections", "in-flight", "rate", "warmup", "duration"]))
        settings.bets = bets
        settings.users = settings.connections
        let group = try EventLoopGroup(loopCount: try options.integer("loops", default: System.coreCount, in: 1...64))
        defer { group.shutdown() }
        let (host, port) = try parseAddress(gateway)
        let ca = options.value("ca").map { ["--ca", $0] } ?? []
        let playerTLS = try TLSOptions.client(try Arguments(ArraySlice(ca), valueOptions: ["ca"]))
        let adminTLS = try TLSOptions.client(
            try Arguments(
                ArraySlice(
                    ca + [
                        "--cert", options.value("admin-cert") ?? ".run/certs/admin.pem",
                        "--key", options.value("admin-key") ?? ".run/certs/admin-key.pem",
                    ]),
                valueOptions: ["ca", "cert", "key"]))

        let admin = try await RPCConnection.connect(host: host, port: port, tls: adminTLS, group: group)
        defer { admin.close() }
        try await prepareWallet(bets, admin: admin)
        var connections: [RPCConnection] = []
        defer { for connection in connections { connection.close() } }
        var guests: [LoadtestGuest] = []
        let run = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        for number in 0..<settings.connections {
            let connection = try await RPCConnection.connect(host: host, port: port, tls: playerTLS, group: group)
            connections.append(connection)
            let guest = try await LoadtestGuest.login(
                app: app, device: "loadtest-bets-\(run)-\(number)", on: connection)
            try await deposit(to: guest.userID, bets, admin: admin)
            guests.append(guest)
        }
        print("\(guests.count) guests signed in through the gateway at \(gateway), each with 1,000,000 LOAD")

        let measurements = await LoadtestCommand.measure(
            connections: connections, plan: try settings.plan(startingAt: monotonicNanoseconds() + 100_000_000),
            settings: settings, callers: guests.map(\.gatewayMetadata))
        let report = LoadtestReport(settings: settings, measurements: measurements)
        report.print()
        report.write(json: options.value("out") ?? ".bench/bets.json", svg: options.value("svg"))
        return measurements.errors.values.reduce(0, +) == 0 ? 0 : 1
    }

    /// The currency and the game, created unless an earlier run did.
    private static func prepareWallet(_ bets: LoadtestBetBatch, admin: RPCConnection) async throws {
        let wallet = WalletV1.WalletAdminClient(caller: admin)
        do {
            _ = try await wallet.createCurrency(.init(code: bets.currency, decimals: 2))
        } catch  where error.code == .alreadyExists {}
        let dice = WalletV1.OddsDefinition(
            sides: 6, winningNumbers: 3, multiplierNumerator: 2, multiplierDenominator: 1)
        do {
            _ = try await wallet.createGame(
                .init(game: .init(gameId: bets.gameID, name: "Load test dice", math: .odds(dice))))
        } catch  where error.code == .alreadyExists {}
    }

    private static func deposit(to user: String, _ bets: LoadtestBetBatch, admin: RPCConnection) async throws {
        _ = try await WalletV1.WalletAdminClient(caller: admin).deposit(
            .init(
                transfer: .init(
                    operationId: RaveID.random().hex,
                    userId: user, currency: bets.currency, economy: .sandbox, amount: "1000000.00",
                    reason: "load test")))
    }
}
