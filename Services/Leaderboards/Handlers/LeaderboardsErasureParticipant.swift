import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.erasure.v1.ErasureParticipant`: identity's deletion saga erases a deleted account's scores here.
final class LeaderboardsErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: LeaderboardsDependencies

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
        // Erasures another instance applied: erase what calls here wrote meanwhile, and drop the ids from this
        // instance's indexes (boards it owns).
        let engine = dependencies.engine
        let store = dependencies.erasureStore
        engine.merges.onErasure { erased in
            try await store.sweep(erased)
            await Self.remove(erased.ids, from: engine)
        }
    }

    /// Erases the user's and its merged ids' scores on every board and version, and their achievements
    /// (docs/leaderboards.md, "Deleting an account"); repeating an erasure id changes nothing.
    ///
    /// From the start of the call submits naming the user are refused in this instance; the rows go once every
    /// call that named it earlier has finished (its score committed and in the index), and the loaded indexes drop
    /// the ids after the commit, so no submit racing the erasure leaves an entry once it has answered.
    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let engine = dependencies.engine
        let store = dependencies.erasureStore
        return try await UserErasure.answer(request, refusingIn: engine.merges) { erasure in
            let applied = try await store.erase(erasure, merges: engine.merges)
            // Also when applied before: an index loaded from the table meanwhile holds nothing of them, and a
            // repeat after a crash between the commit and this line finishes the work.
            await Self.remove(applied?.erased.ids ?? [erasure.userID] + erasure.mergedIDs, from: engine)
            return applied?.rows
        }
    }

    /// Drops `ids` from every loaded index (the table no longer holds them).
    static func remove(_ ids: [RaveID], from engine: LeaderboardEngine) async {
        for index in await engine.indexes.loadedIndexes() {
            index.update { ranks in
                for id in ids { ranks.remove(userID: id) }
            }
        }
    }
}
