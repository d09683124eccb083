import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices

/// rave.push.v1.PushInternal: other backend services send notifications (gift received, achievement unlocked).
struct InternalHandlers: PushV1.PushInternalHandler {
    let dependencies: PushDependencies

    func sendNotification(
        _ request: PushV1.SendNotificationRequest, context: RequestContext
    ) async throws -> PushV1.SendNotificationResponse {
        return try await NotificationSender(dependencies: dependencies).send(request)
    }
}
