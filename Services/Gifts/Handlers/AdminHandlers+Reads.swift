import RaveMessages
import RaveRPC

/// The operator reads of `rave.gifts.v1.GiftsAdmin`.
extension AdminHandlers {
    func listUserGifts(
        _ request: GiftsV1.ListUserGiftsRequest, context: RequestContext
    ) async throws -> GiftsV1.ListUserGiftsResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try RequestLimits.id(request.appId, field: "app_id")
        let user = try await dependencies.mergedUsers.resolve(RequestLimits.id(request.userId, field: "user_id"))
        let limit = try RequestLimits.pageSize(request.pageSize)
        let cursor = try PageCursor.parse(request.pageToken)
        let (gifts, next) = try await dependencies.gifts.userGifts(of: user, appID: appID, limit: limit, after: cursor)
        return GiftsV1.ListUserGiftsResponse(gifts: gifts, nextPageToken: next?.token ?? "")
    }
}
