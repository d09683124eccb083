import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.erasure.v1.ErasureParticipant: an account deletion's erasure of the wallet (docs/wallet.md, "Erasure").
///
/// Money cannot vanish from a double-entry ledger, so the user's accounts, transfers, bets and seeds stay with the
/// user id replaced by identity's tombstone id (each merged id by a random id of its own); the ledger sums to zero
/// as before. The wallet's merge records of the ids are deleted. Idempotent by erasure id (`erasures`, which holds
/// no user id).
struct WalletErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: WalletDependencies

    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let user = try WalletDependencies.userID(request.userId, field: "user_id")
        let tombstone = try WalletDependencies.userID(request.tombstoneId, field: "tombstone_id")
        var named: [RaveID] = []
        for (index, text) in request.mergedUserIds.enumerated() {
            named.append(try WalletDependencies.userID(text, field: "merged_user_ids[\(index)]"))
        }
        guard !request.erasureId.isEmpty, request.erasureId.count <= 64 else {
            throw WalletError.invalidArgument("erasure_id must be 1…64 characters, got \(request.erasureId.count)")
        }
        guard tombstone != user, !named.contains(tombstone) else {
            throw WalletError.invalidArgument("tombstone_id must differ from user_id and merged_user_ids")
        }
        let store = ErasureStore()
        let erased = try await dependencies.pool.transaction(retryOnSerializationFailure: true) {
            transaction -> (ids: [RaveID], rows: UInt64)? in
            guard try await store.record(request.erasureId, in: transaction) else { return nil }
            var merged = named
            for source in try await store.mergedSources(of: user, in: transaction) where !merged.contains(source) {
                merged.append(source)
            }
            merged.removeAll { $0 == user }
            let ids = [user] + merged
            let replacements = [tombstone] + merged.map { _ in RaveID.random() }
            return (ids, try await store.erase(ids, replacements: replacements, in: transaction))
        }
        guard let erased else { return ErasureV1.EraseUserResponse(alreadyApplied: true, rowsAffected: 0) }
        // Cached account ids of the erased ids now belong to the replacements: a later call must not find them.
        let ids = Set(erased.ids)
        dependencies.ledger.accountIDs.withLock { cached in
            cached = cached.filter { !ids.contains($0.key.userID) }
        }
        return ErasureV1.EraseUserResponse(alreadyApplied: false, rowsAffected: erased.rows)
    }
}
