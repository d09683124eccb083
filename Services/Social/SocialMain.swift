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
        let tls = try TLSContext(
            .client(
                trustRootsPath: context.configuration.tlsCertificateAuthorityPath,
                certificateChainPath: context.configuration.tlsCertificatePath,
                privateKeyPath: context.configuration.tlsPrivateKeyPath))
        let identity = RPCClient(
            host: configuration.identityAddress.host, port: configuration.identityAddress.port, tls: tls,
            group: context.group, logger: context.logger.with("peer", "identity"))
        let dependencies = SocialDependencies(
            pool: context.pool, directory: IdentityUserDirectory(caller: identity), configuration: configuration,
            loop: context.group.next(), logger: context.logger,
            adminScope: AdminScope(identity: identity, setting: "RAVE_SOCIAL_IDENTITY_ADDRESS"))
        if configuration.friendCacheIDs > 0 { context.addBackgroundService(dependencies.friendIDs) }
        // Merged-away users resolve to their targets; other processes' merges are announced and swept here.
        context.addBackgroundService(dependencies.mergedUsers)
        // Friend request events, from the outbox to the sinks of RAVE_EVENT_SINKS (push shows them).
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "social"))
        return dependencies.rpcServices
    }

    /// The migrations ship as a SwiftPM resource, so an installed binary finds them next to itself.
    package static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
