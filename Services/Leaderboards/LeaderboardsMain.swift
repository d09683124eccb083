import Foundation
import RaveEvents
import RaveMerges
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// The leaderboards service's entry point: high scores, ranks, tournaments and achievements.
package enum LeaderboardsMain {
    package static func main() async {
        await RaveServiceMain.run(name: "leaderboards", migrations: .directory(migrationsDirectory)) { context in
            try await services(context: context)
        }
    }

    /// The production services: friends from social and names from identity, each over an mTLS client that
    /// presents leaderboards' own certificate.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let configuration = try LeaderboardsConfiguration(
            environment: context.environment, listen: context.configuration.listen)
        context.logger.info("leaderboards settings", configuration.settings)
        // Achievement unlocks reach push (and any other sink of RAVE_EVENT_SINKS) through the outbox.
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "leaderboards"))
        var friends: any FriendsProvider = StaticFriendsProvider()
        if let address = configuration.socialAddress {
            friends = SocialFriendsProvider(caller: try context.peerClient(at: address, peer: "social"))
        }
        var profiles: any ProfileProvider = StaticProfileProvider()
        var identity: RPCClient?
        if let address = configuration.identityAddress {
            let client = try context.peerClient(at: address, peer: "identity")
            profiles = IdentityProfileProvider(caller: client, logger: context.logger.with("component", "profiles"))
            identity = client
        }
        if let host = SocketAddress(parsing: configuration.advertiseAddress)?.host, ["0.0.0.0", "::"].contains(host) {
            context.logger.warning(
                "RAVE_LEADERBOARDS_ADVERTISE_ADDRESS is a wildcard; set it to the address the gateway uses for this "
                    + "instance, or NotBoardOwner and ListBoardOwners name an address nobody can reach",
                [("address", configuration.advertiseAddress)])
        }
        let merges = context.mergedUsers()
        let engine = LeaderboardEngine(
            pool: context.pool, concurrentCommits: configuration.concurrentCommits,
            concurrentBatch: configuration.concurrentBatch, merges: merges)
        let indexes = engine.indexes
        let ownership = BoardOwnership(
            pool: context.pool, address: configuration.advertiseAddress, leaseDuration: configuration.leaseDuration,
            evict: { indexes.evict(boardID: $0) })
        context.addBackgroundService(BoardLeaseKeeper(ownership: ownership, logger: context.logger))
        let dependencies = LeaderboardsDependencies(
            engine: engine, ownership: ownership, friends: friends, profiles: profiles,
            adminScope: AdminScope(identity: identity, setting: "RAVE_LEADERBOARDS_IDENTITY_ADDRESS"))
        // Before the server accepts calls.
        try await dependencies.loadIndexes(logger: context.logger)
        return dependencies.rpcServices
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
