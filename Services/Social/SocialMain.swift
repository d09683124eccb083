import Foundation
import RaveEvents
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTransport

/// The social service's entry point: friends, followers, lists, blocks and contacts.
package enum SocialMain {
    package static func main() async {
        await RaveServiceMain.run(name: "social", migrations: .directory(migrationsDirectory)) { context in
            try await services(context: context)
        }
    }

    /// The RPC services, with a client of identity that presents social's own certificate.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let configuration = try SocialConfiguration(environment: context.environment)
        context.logger.info("social settings", configuration.settings)
        let identity = try context.peerClient(at: configuration.identityAddress, peer: "identity")
        let dependencies = SocialDependencies(
            pool: context.pool, directory: IdentityUserDirectory(caller: identity), configuration: configuration,
            loop: context.group.next(), logger: context.logger, mergedUsers: context.mergedUsers(),
            adminScope: AdminScope(identity: identity, setting: "RAVE_SOCIAL_IDENTITY_ADDRESS"))
        if configuration.friendCacheIDs > 0 { context.addBackgroundService(dependencies.friendIDs) }
        // Friend request events, from the outbox to the sinks of RAVE_EVENT_SINKS (push shows them).
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "social"))
        return dependencies.rpcServices
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    package static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
