import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.merge.v1.MergeParticipant`: identity's merge saga combines two players' scores and achievements here.
final class MergeService: MergeV1.MergeParticipantHandler {
    let engine: LeaderboardEngine
    let store: MergeStore

    init(engine: LeaderboardEngine) {
        self.engine = engine
        store = MergeStore(pool: engine.scores.pool)
    }

    /// Combines the source's data into the target; repeating a merge id changes nothing.
    ///
    /// The target keeps the better score per board and version; achievements are united.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        try context.requireService()
        guard !request.mergeId.isEmpty else { throw LeaderboardsError.invalidArgument("merge_id is required") }
        let source = try RequestLimits.id(request.sourceUserId, field: "source_user_id")
        let target = try RequestLimits.id(request.targetUserId, field: "target_user_id")
        guard source != target else { throw LeaderboardsError.invalidArgument("cannot merge a user into itself") }
        guard let merged = try await store.merge(mergeID: request.mergeId, source: source, target: target) else {
            return MergeV1.MergeUsersResponse(alreadyApplied: true)
        }
        // The table is the truth; bring the loaded indexes in line with it.
        for index in await engine.indexes.loadedIndexes() {
            let best = merged.first { $0.boardID == index.boardID && $0.version == index.version }
            index.update { ranks in
                ranks.remove(userID: source)
                if let best { ranks.replace(userID: target, score: best.score, achievedAt: best.achievedAt) }
            }
        }
        return MergeV1.MergeUsersResponse(alreadyApplied: false)
    }
}
