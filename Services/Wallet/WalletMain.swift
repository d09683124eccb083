import Foundation
import RaveMerges
import RaveRPC
import RaveRuntime

/// The wallet service's entry point: balances, the double-entry ledger and bets.
package enum WalletMain {
    package static func main() async {
        await RaveServiceMain.run(name: "wallet", migrations: .directory(WalletMain.migrationsDirectory)) {
            context in try services(context: context)
        }
    }

    /// The RPC services, with a client of identity presenting the wallet's own certificate (operator transfers
    /// ask it whether their user exists) and the merged-users record (merged-away players resolve to their
    /// targets; other processes' merges are announced and swept here).
    static func services(context: ServiceContext) throws -> [any RPCService] {
        let configuration = try WalletConfiguration(environment: context.environment)
        context.logger.info("wallet settings", configuration.settings)
        let identity = try context.peerClient(at: configuration.identityAddress, peer: "identity")
        return WalletDependencies(
            pool: context.pool, users: IdentityUserDirectory(identity: identity),
            laneCount: configuration.laneCount, merges: context.mergedUsers(),
            adminScope: AdminScope(identity: identity, setting: "RAVE_WALLET_IDENTITY_ADDRESS")
        ).rpcServices
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    package static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
