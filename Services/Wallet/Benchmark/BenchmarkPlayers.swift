import RavePostgres

/// The players of `wallet bench`, which funds players it makes itself and runs without identity: each is active.
///
/// Only the benchmark command uses this; the service asks identity (`IdentityUserDirectory`).
struct BenchmarkPlayers: UserDirectory {
    func standing(of user: RaveID) async throws -> UserStanding { .active }
}
