import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices

/// Validates a send request and stores the notification with its deliveries; shared by the admin and internal
/// methods.
struct NotificationSender: Sendable {
    let dependencies: PushDependencies

    static let maximumRecipients = 1000
    static let defaultTTLSeconds: Int64 = 28 * 24 * 3600
    static let maximumTTLSeconds: Int64 = 28 * 24 * 3600

    func send(_ request: PushV1.SendNotificationRequest) async throws -> PushV1.SendNotificationResponse {
        try await send(request, in: nil)
    }

    /// Sends in `transaction` when given (committing with the caller's other writes), else in one of its own.
    func send(
        _ request: PushV1.SendNotificationRequest, in transaction: PostgresTransaction?
    ) async throws -> PushV1.SendNotificationResponse {
        _ = try PushDependencies.raveID(request.appId, field: "app_id")
        guard (1...Self.maximumRecipients).contains(request.userIds.count) else {
            throw PushError.invalidArgument(
                "user_ids must hold 1…\(Self.maximumRecipients) users, got \(request.userIds.count)")
        }
        var named: [RaveID] = []
        named.reserveCapacity(request.userIds.count)
        for text in request.userIds { named.append(try PushDependencies.raveID(text, field: "user_ids")) }
        // Merged-away recipients are their targets now; one named twice that way is notified once. A deleted one is
        // not notified, and the stored request does not name it (docs/push.md, "Deleting an account").
        let resolved = try await dependencies.merges.resolve(named)
        let erased = dependencies.merges.erased(among: named + resolved)
        var seen: Set<RaveID> = []
        let users = resolved.filter { !erased.contains($0) && seen.insert($0).inserted }
        guard let notification = request.notification else {
            throw PushError.invalidArgument("notification is required")
        }
        guard !notification.title.isEmpty || !notification.body.isEmpty else {
            throw PushError.invalidArgument("a notification needs a title or a body")
        }
        if case .unrecognized(let value) = notification.category {
            throw PushError.invalidArgument("unknown category \(value): use CATEGORY_NORMAL or CATEGORY_ADVERTISING")
        }
        if case .unrecognized(let value) = notification.nightPolicy {
            throw PushError.invalidArgument("unknown night_policy \(value): use NIGHT_POLICY_HOLD or NIGHT_POLICY_DROP")
        }
        guard (0...Self.maximumTTLSeconds).contains(notification.ttlSeconds) else {
            throw PushError.invalidArgument(
                "ttl_seconds must be 0…\(Self.maximumTTLSeconds) (28 days), got \(notification.ttlSeconds)")
        }
        let ttl = notification.ttlSeconds == 0 ? Self.defaultTTLSeconds : notification.ttlSeconds
        try ProviderPayload.checkSize(notification, ttlSeconds: ttl)
        for localization in notification.localizations {
            try ProviderPayload.checkSize(
                EventTemplates.localized(notification, language: localization.language), ttlSeconds: ttl)
        }
        let id =
            request.notificationId.isEmpty
            ? RaveID.random() : try PushDependencies.raveID(request.notificationId, field: "notification_id")
        var stored = request
        stored.notificationId = id.hex
        if !erased.isEmpty {
            stored.userIds = zip(request.userIds, zip(named, resolved)).filter { _, ids in
                !erased.contains(ids.0) && !erased.contains(ids.1)
            }.map(\.0)
        }
        let now = dependencies.clock.now()
        let expiresAt = now.addingTimeInterval(TimeInterval(ttl))
        let decide: @Sendable (TargetDevice) -> DeliveryDecision = { device in
            ConsentRules.decide(
                category: notification.category, nightPolicy: notification.nightPolicy, consent: device.consent,
                timeZone: device.timeZone, now: now)
        }
        guard let transaction else {
            let response = try await dependencies.notifications.send(
                id: id, request: stored, users: users, expiresAt: expiresAt, now: now, on: dependencies.pool,
                decide: decide)
            if response.queued > 0 { dependencies.deliveriesQueued() }
            return response
        }
        // The caller wakes the workers once its transaction has committed.
        return try await dependencies.notifications.send(
            id: id, request: stored, users: users, expiresAt: expiresAt, now: now, in: transaction, decide: decide)
    }
}

/// rave.push.v1.PushAdmin: a game's operators send notifications and inspect their delivery.
struct PushAdminService: PushV1.PushAdminHandler {
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

/// rave.push.v1.PushInternal: other backend services send notifications (gift received, achievement unlocked).
struct PushInternalService: PushV1.PushInternalHandler {
    let dependencies: PushDependencies

    func sendNotification(
        _ request: PushV1.SendNotificationRequest, context: RequestContext
    ) async throws -> PushV1.SendNotificationResponse {
        return try await NotificationSender(dependencies: dependencies).send(request)
    }
}
