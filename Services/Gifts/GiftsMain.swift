import Foundation
import RaveEvents
import RaveMerges
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTransport

/// The gifts service's entry point: gift types, gifts, requests, share-with-gift and install links.
package enum GiftsMain {
    package static func main() async {
        await RaveServiceMain.run(name: "gifts", migrations: .directory(migrationsDirectory)) { context in
            try await services(context: context)
        }
    }

    /// The RPC services, with clients of identity and social that present gifts' own certificate, and the
    /// publisher that delivers gifts' events to the sinks of RAVE_EVENT_SINKS.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let configuration = try GiftsConfiguration(environment: context.environment)
        context.logger.info("gifts settings", configuration.settings)
        let identity = try context.peerClient(at: configuration.identityAddress, peer: "identity")
        let social = try context.peerClient(at: configuration.socialAddress, peer: "social")
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "gifts"))
        let directory = PeerDirectory(
            identity: identity, social: social, logger: context.logger.with("component", "directory"))
        let dependencies = GiftsDependencies(
            pool: context.pool, directory: directory, logger: context.logger, mergedUsers: context.mergedUsers(),
            adminScope: AdminScope(identity: identity, setting: "RAVE_GIFTS_IDENTITY_ADDRESS"))
        return dependencies.rpcServices
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    package static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
