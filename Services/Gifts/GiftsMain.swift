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
        let tls = try TLSContext(
            .client(
                trustRootsPath: context.configuration.tlsCertificateAuthorityPath,
                certificateChainPath: context.configuration.tlsCertificatePath,
                privateKeyPath: context.configuration.tlsPrivateKeyPath))
        let identity = RPCClient(
            host: configuration.identityAddress.host, port: configuration.identityAddress.port, tls: tls,
            group: context.group, logger: context.logger.with("peer", "identity"))
        let social = RPCClient(
            host: configuration.socialAddress.host, port: configuration.socialAddress.port, tls: tls,
            group: context.group, logger: context.logger.with("peer", "social"))
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "gifts"))
        let directory = PeerDirectory(
            identity: identity, social: social, logger: context.logger.with("component", "directory"))
        // Merged-away players resolve to their targets; other processes' merges are announced and swept here.
        let merges = MergedUsers(pool: context.pool, loop: context.group.next(), logger: context.logger)
        context.addBackgroundService(merges)
        let dependencies = GiftsDependencies(
            pool: context.pool, directory: directory, logger: context.logger, mergedUsers: merges,
            adminScope: AdminScope(identity: identity, setting: "RAVE_GIFTS_IDENTITY_ADDRESS"))
        return dependencies.rpcServices
    }

    /// The migrations ship as a SwiftPM resource, so an installed binary finds them next to itself.
    package static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
