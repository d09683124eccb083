import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices

/// `rave.gifts.v1.GiftsAdmin`: operators define an application's gift types.
final class AdminHandlers: GiftsV1.GiftsAdminHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    func createGiftType(
        _ request: GiftsV1.CreateGiftTypeRequest, context: RequestContext
    ) async throws -> GiftsV1.CreateGiftTypeResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let type = try await dependencies.types.create(
            try Self.giftType(request.giftType), appID: try Self.app(request.appId))
        return GiftsV1.CreateGiftTypeResponse(giftType: type.message)
    }

    func updateGiftType(
        _ request: GiftsV1.UpdateGiftTypeRequest, context: RequestContext
    ) async throws -> GiftsV1.UpdateGiftTypeResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let type = try await dependencies.types.update(
            try Self.giftType(request.giftType), appID: try Self.app(request.appId))
        return GiftsV1.UpdateGiftTypeResponse(giftType: type.message)
    }

    func listGiftTypes(
        _ request: GiftsV1.ListGiftTypesRequest, context: RequestContext
    ) async throws -> GiftsV1.ListGiftTypesResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let types = try await dependencies.types.all(appID: try Self.app(request.appId))
        return GiftsV1.ListGiftTypesResponse(giftTypes: types.map(\.message))
    }

    func getGiftType(
        _ request: GiftsV1.GetGiftTypeRequest, context: RequestContext
    ) async throws -> GiftsV1.GetGiftTypeResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let key = try RequestLimits.giftTypeKey(request.key, field: "key")
        return GiftsV1.GetGiftTypeResponse(
            giftType: try await dependencies.types.find(key, appID: try Self.app(request.appId)).message)
    }

    private static func app(_ text: String) throws(GiftsError) -> RaveID {
        try RequestLimits.id(text, field: "app_id")
    }

    private static func giftType(_ type: GiftsV1.GiftType?) throws(GiftsError) -> GiftsV1.GiftType {
        guard let type else { throw .invalidArgument("gift_type is required") }
        return type
    }
}
