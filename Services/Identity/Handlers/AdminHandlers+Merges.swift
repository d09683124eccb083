import RaveMessages
import RavePostgres
import RaveRPC

/// Merges for operators: the list, and a stuck participant retried at once (docs/identity.md, "Merge").
extension AdminHandlers {
    func listMerges(
        _ request: IdentityV1.ListMergesRequest, context: RequestContext
    ) async throws -> IdentityV1.ListMergesResponse {
        _ = try await dependencies.admin(context)
        let limit = try RequestLimits.mergePageSize.check(request.pageSize, orThrow: IdentityError.invalidArgument)
        var state: IdentityV1.MergeState?
        switch request.state {
        case .unspecified: state = nil
        case .pending, .completed: state = request.state
        case .unrecognized(let value):
            throw IdentityError.invalidArgument(
                "state must be MERGE_STATE_PENDING, MERGE_STATE_COMPLETED or unspecified, got \(value)")
        }
        let user = request.userId.isEmpty ? nil : try Validation.raveID(request.userId, field: "user_id")
        let cursor = try PageCursor.parse(request.pageToken, method: "ListMerges")
        let store = MergeStore(database: dependencies.pool)
        let page = try await store.page(state: state, user: user, after: cursor, limit: limit)
        var response = IdentityV1.ListMergesResponse(merges: page.merges, nextPageToken: page.next?.token ?? "")
        if let user { response.mergedUserIds = try await store.mergedIdentities(of: user).map(\.hex) }
        return response
    }

    func retryMergeParticipant(
        _ request: IdentityV1.RetryMergeParticipantRequest, context: RequestContext
    ) async throws -> IdentityV1.RetryMergeParticipantResponse {
        _ = try await dependencies.admin(context)
        let id = try Validation.raveID(request.mergeId, field: "merge_id")
        let participant = try Validation.text(request.participant, field: "participant", maximum: 64)
        let store = MergeStore(database: dependencies.pool)
        guard let merge = try await store.merge(id) else { throw IdentityError.notFound("no merge \(id.hex)") }
        if merge.acknowledgedBy.contains(participant) {
            throw IdentityError.failedPrecondition(
                "participant \"\(participant)\" already acknowledged merge \(id.hex); there is nothing to retry")
        }
        guard merge.pendingParticipants.contains(participant) else {
            let named = (merge.acknowledgedBy + merge.pendingParticipants).map { "\"\($0)\"" }
            throw IdentityError.notFound(
                "merge \(id.hex) has no participant \"\(participant)\"; its participants are "
                    + (named.isEmpty ? "none" : named.joined(separator: ", ")))
        }
        return IdentityV1.RetryMergeParticipantResponse(
            rescheduled: UInt32(clamping: try await store.retry(participant: participant)))
    }
}
