import RavePostgres
import Wallet

/// The players of `rave-bench wallet`, which funds players it makes itself and runs without identity: each is active.
///
/// The service itself asks identity (`IdentityUserDirectory`).
struct BenchmarkPlayers: UserDirectory {
    func standing(of user: RaveID) async throws -> UserStanding { .active }
}
