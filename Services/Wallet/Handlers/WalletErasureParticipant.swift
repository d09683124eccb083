import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.erasure.v1.ErasureParticipant: an account deletion's erasure of the wallet (docs/wallet.md, "Erasure").
///
/// Money cannot vanish from a double-entry ledger, so the user's accounts, transfers, bets and seeds stay with the
/// user id replaced by identity's tombstone id (each merged id by a random id of its own); the ledger sums to zero
/// as before. The wallet's merge records of the ids are deleted. Idempotent by erasure id (`applied_erasures`, which
/// holds no user id).
struct WalletErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: WalletDependencies

    init(dependencies: WalletDependencies) {
        self.dependencies = dependencies
        // Erasures another wallet process applied: replace the ids in what calls here wrote meanwhile.
        let dependencies = self.dependencies
        dependencies.merges.onErasure { erased in
            _ = try await Self.erase(dependencies: dependencies) { _ in erased }
        }
    }

    /// Replaces the user's and its merged ids' ids in the money rows; repeating an erasure id changes nothing.
    ///
    /// From the start of the call calls naming the user are refused in this process; the ids are replaced once
    /// every call that named them earlier has finished, so no bet or deposit under them is left behind.
    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let merges = dependencies.merges
        return try await UserErasure.answer(request, refusingIn: merges) { erasure in
            try await Self.erase(dependencies: dependencies) { transaction in
                try await merges.beginErasure(erasure, in: transaction)
            }
        }
    }

    /// Replaces the ids `begin` finds in its transaction (nil: nothing to do) and drops their cached account ids,
    /// which now belong to the replacements; the rows changed, with the `merged_users` rows the erasure deleted.
    private static func erase(
        dependencies: WalletDependencies, begin: (PostgresTransaction) async throws -> ErasedIDs?
    ) async throws -> Int? {
        let store = ErasureStore()
        let erased = try await dependencies.pool.transaction(retryOnSerializationFailure: true) {
            transaction -> (ids: [RaveID], rows: Int)? in
            guard let erased = try await begin(transaction) else { return nil }
            return (erased.ids, try await store.erase(erased, in: transaction) + erased.mergedRows)
        }
        guard let erased else { return nil }
        dependencies.ledger.forgetAccounts(of: Set(erased.ids))
        return erased.rows
    }
}
