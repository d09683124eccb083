import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices

/// rave.push.v1.PushAdmin: a game's operators send notifications and inspect their delivery.
struct AdminHandlers: PushV1.PushAdminHandler {
    let dependencies: PushDependencies

    func sendNotification(
        _ request: PushV1.SendNotificationRequest, context: RequestContext
    ) async throws -> PushV1.SendNotificationResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        return try await NotificationSender(dependencies: dependencies).send(request)
    }

    func getDeliveries(
        _ request: PushV1.GetDeliveriesRequest, context: RequestContext
    ) async throws -> PushV1.GetDeliveriesResponse {
        _ = try context.requireAdminCaller()
        let id = try PushDependencies.raveID(request.notificationId, field: "notification_id")
        if let app = try await dependencies.notifications.application(of: id, on: dependencies.pool) {
            try await dependencies.adminScope.requireScope(context, applicationID: app)
        }
        var deliveries = try await dependencies.notifications.deliveries(of: id, on: dependencies.pool)
        // A viewer reads deliveries: the token is masked as ListUserDevices masks it.
        for index in deliveries.indices { deliveries[index].token = Self.maskedToken(deliveries[index].token) }
        return PushV1.GetDeliveriesResponse(deliveries: deliveries)
    }
}
