import RaveMessages
import RavePostgres
import RaveRPC

/// The merges list for operators (docs/identity.md, "Merges").
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
        var cursor: MergeStore.ListCursor?
        if !request.pageToken.isEmpty {
            guard let parsed = MergeStore.ListCursor(token: request.pageToken) else {
                throw IdentityError.invalidArgument("page_token must be a next_page_token ListMerges returned")
            }
            cursor = parsed
        }
        let store = MergeStore(database: dependencies.pool)
        let page = try await store.page(state: state, user: user, after: cursor, limit: limit)
        var response = IdentityV1.ListMergesResponse(merges: page.merges, nextPageToken: page.next?.token ?? "")
        if let user { response.mergedUserIds = try await store.mergedIdentities(of: user).map(\.hex) }
        return response
    }
}
