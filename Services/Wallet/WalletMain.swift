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
            context in
            let configuration = try WalletConfiguration(environment: context.environment)
            context.logger.info("wallet settings", configuration.settings)
            return WalletDependencies(pool: context.pool, laneCount: configuration.laneCount).services()
        }
    }

    /// The migrations ship as a SwiftPM resource so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
