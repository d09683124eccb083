import Foundation
import RaveRPC
import RaveRuntime

/// The wallet service's entry point: balances, the double-entry ledger and bets.
@main
enum WalletMain {
    static func main() async {
        await RaveServiceMain.run(name: "wallet", migrations: .directory(WalletMain.migrationsDirectory)) {
            context in WalletDependencies(pool: context.pool).services()
        }
    }

    /// The migrations ship as a SwiftPM resource so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
