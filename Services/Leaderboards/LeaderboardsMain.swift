import Foundation
import RaveEvents
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// The leaderboards service's entry point: high scores, ranks, tournaments and achievements.
@main
enum LeaderboardsMain {
    static func main() async {
        await RaveServiceMain.run(name: "leaderboards", migrations: .directory(migrationsDirectory)) { context in
            try await services(context: context)
        }
    }

    /// The production services: friends from social and names from identity, each over an mTLS client that
    /// presents leaderboards' own certificate.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let configuration = try LeaderboardsConfiguration(environment: context.environment)
        context.logger.info("leaderboards settings", configuration.settings)
        // Achievement unlocks reach push (and any other sink of RAVE_EVENT_SINKS) through the outbox.
        context.addBackgroundService(try EventPublisher.forService(context: context, source: "leaderboards"))
        let tls = try TLSContext(
            .client(
                trustRootsPath: context.configuration.tlsCertificateAuthorityPath,
                certificateChainPath: context.configuration.tlsCertificatePath,
                privateKeyPath: context.configuration.tlsPrivateKeyPath))
        var friends: any FriendsProvider = StaticFriendsProvider()
        if let address = configuration.socialAddress {
            friends = SocialFriendsProvider(
                caller: RPCClient(
                    host: address.host, port: address.port, tls: tls, group: context.group,
                    logger: context.logger.with("peer", "social")))
        }
        var profiles: any ProfileProvider = StaticProfileProvider()
        if let address = configuration.identityAddress {
            let identity = RPCClient(
                host: address.host, port: address.port, tls: tls, group: context.group,
                logger: context.logger.with("peer", "identity"))
            profiles = IdentityProfileProvider(caller: identity, logger: context.logger.with("component", "profiles"))
        }
        return try await services(pool: context.pool, logger: context.logger, friends: friends, profiles: profiles)
    }

    /// The migrations ship as a SwiftPM resource so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }

    /// Builds the handlers and loads every active board's current version before the server accepts calls, so
    /// the first requests do not pay for loading.
    static func services(
        pool: PostgresPool, logger: Logger, clock: WallClock = .system,
        friends: any FriendsProvider = StaticFriendsProvider(), profiles: any ProfileProvider = StaticProfileProvider()
    ) async throws -> [any RPCService] {
        let engine = LeaderboardEngine(pool: pool, clock: clock)
        let started = ContinuousClock.now
        var entries = 0
        for board in try await engine.definitions.everyActiveBoard() {
            entries += try await engine.currentIndex(of: board).read { $0.count }
        }
        logger.info("indexes loaded", [("entries", "\(entries)"), ("duration", "\(ContinuousClock.now - started)")])
        return [
            LeaderboardsService(engine: engine, friends: friends, profiles: profiles),
            LeaderboardsAdminService(engine: engine), MergeService(engine: engine),
        ]
    }
}
