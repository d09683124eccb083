import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.merge.v1.MergeParticipant`: identity's merge saga combines two players' scores and achievements here.
final class LeaderboardsMergeParticipant: MergeV1.MergeParticipantHandler {
    let dependencies: LeaderboardsDependencies

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
        // Merges another instance applied: move what calls here wrote under the source meanwhile, and bring this
        // instance's indexes (boards it owns) in line.
        let engine = dependencies.engine
        let store = dependencies.mergeStore
        engine.merges.onSweep { source, target in
            let merged = try await store.sweep(source: source, target: target)
            await Self.apply(merged, source: source, target: target, to: engine)
        }
    }

    /// Combines the source's data into the target; repeating a merge id changes nothing.
    ///
    /// The target keeps the better score per board and version; achievements are united. From the start of the
    /// call the source resolves to the target in this instance; the rows move once every call that resolved it
    /// earlier has finished (`MergedUsers.redirect`), so none of their scores is left behind.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        guard !request.mergeId.isEmpty else { throw LeaderboardsError.invalidArgument("merge_id is required") }
        let source = try RequestLimits.id(request.sourceUserId, field: "source_user_id")
        let target = try RequestLimits.id(request.targetUserId, field: "target_user_id")
        guard source != target else { throw LeaderboardsError.invalidArgument("cannot merge a user into itself") }
        let engine = dependencies.engine
        await engine.merges.redirect(source: source, target: target)
        guard
            let merged = try await dependencies.mergeStore.merge(
                mergeID: request.mergeId, source: source, target: target, merges: engine.merges)
        else {
            return MergeV1.MergeUsersResponse(alreadyApplied: true)
        }
        await Self.apply(merged, source: source, target: target, to: engine)
        return MergeV1.MergeUsersResponse(alreadyApplied: false)
    }

    /// The table is the truth; brings the loaded indexes in line with it: the source leaves, the target keeps the
    /// better of its entry and the table's (a submit to the target may have raced the merge in memory).
    static func apply(_ merged: [MergedScore], source: RaveID, target: RaveID, to engine: LeaderboardEngine) async {
        for index in await engine.indexes.loadedIndexes() {
            let best = merged.first { $0.boardID == index.boardID && $0.version == index.version }
            index.update { ranks in
                ranks.remove(userID: source)
                if let best { ranks.record(userID: target, score: best.score, achievedAt: best.achievedAt) }
            }
        }
    }
}
