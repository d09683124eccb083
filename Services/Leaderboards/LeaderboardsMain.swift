import Foundation
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry

/// The leaderboards service's entry point: high scores, ranks, tournaments and achievements.
@main
enum LeaderboardsMain {
    static func main() async {
        await RaveServiceMain.run(name: "leaderboards", migrations: .directory(migrationsDirectory)) { context in
            try await services(pool: context.pool, logger: context.logger)
        }
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
