import Foundation
import RaveRPC
import RaveRuntime

/// The wallet service's entry point: balances, the double-entry ledger and bets.
@main
enum WalletMain {
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "bench" {
            exit(await WalletBenchmarkCommand.run(environment: ProcessInfo.processInfo.environment))
        }
        await RaveServiceMain.run(name: "wallet", migrations: .directory(WalletMain.migrationsDirectory)) {
            context in WalletDependencies(pool: context.pool, laneCount: laneCount(context.environment)).services()
        }
    }

    /// Group-commit lanes (`RAVE_WALLET_LANES`, default 4): rounds that commit at once, each on its own connection.
    static func laneCount(_ environment: [String: String]) -> Int {
        min(max(environment["RAVE_WALLET_LANES"].flatMap(Int.init) ?? 4, 1), 64)
    }

    /// The migrations ship as a SwiftPM resource so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
