import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry

/// rave.events.v1.EventSink for push: gift, gift request, friend request and achievement events become
/// notifications to their recipient, worded by the app's templates (docs/push.md, "Event notifications").
///
/// Each event's notification, deliveries and inbox entry commit in the transaction that marks the event
/// processed, so a redelivered event never notifies twice.
struct PushEventSink: EventsV1.EventSinkHandler {
    private let sink: EventSinkService
    private let wake: @Sendable () -> Void

    init(dependencies: PushDependencies, logger: Logger) {
        let notifications = EventNotifications(dependencies: dependencies, logger: logger)
        sink = EventSinkService(pool: dependencies.pool, logger: logger) { event, transaction in
            try await notifications.notify(about: event, in: transaction)
        }
        wake = dependencies.deliveriesQueued
    }

    func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        let response = try await sink.deliverEvents(request, context: context)
        // Only now are the deliveries committed, so a woken worker finds them.
        if response.handled > 0 { wake() }
        return response
    }
}

/// Turns one event into a notification: the recipient, the placeholder values, and the app's texts.
struct EventNotifications: Sendable {
    let dependencies: PushDependencies
    let logger: Logger

    /// What a consumed event says, independent of its payload type.
    struct Facts {
        var appID: String
        var recipient: String
        var values: [String: String]
        var data: [PushV1.DataEntry]
    }

    /// Stores the notification for `event` in `transaction`; false for topics push does not consume.
    ///
    /// An event that cannot become a notification (an undecodable payload, a malformed recipient, a text over
    /// the providers' limit) is logged and counted as handled: retrying it would never succeed and would hold
    /// back the later events of its key.
    func notify(about event: EventsV1.Event, in transaction: PostgresTransaction) async throws -> Bool {
        let facts: Facts?
        do {
            facts = try Self.facts(of: event)
        } catch {
            logger.error("dropping an undecodable event", Self.fields(event, error))
            return true
        }
        guard let facts else { return false }
        do {
            let recipient = try PushDependencies.raveID(facts.recipient, field: "recipient")
            let context = try await dependencies.templates.forEvent(
                appID: facts.appID, topic: event.topic, user: recipient, on: transaction)
            guard
                let text = EventTemplates.notificationText(
                    topic: event.topic, values: facts.values, deviceLanguages: context.deviceLanguages,
                    appTemplates: context.templates, defaultLanguage: context.defaultLanguage)
            else { return false }
            let request = PushV1.SendNotificationRequest(
                appId: facts.appID, userIds: [recipient.hex],
                notification: PushV1.Notification(
                    title: text.title, body: text.body, data: facts.data, category: .normal,
                    localizations: text.localizations),
                notificationId: event.eventId)
            _ = try await NotificationSender(dependencies: dependencies).send(request, in: transaction)
        } catch let error as PushError where error.kind == .invalidArgument {
            logger.error("dropping an event push cannot notify about", Self.fields(event, error))
        }
        return true
    }

    /// The facts of a consumed topic's payload; nil for other topics.
    static func facts(of event: EventsV1.Event) throws -> Facts? {
        func data(_ entries: (String, String)...) -> [PushV1.DataEntry] {
            [PushV1.DataEntry(key: "rave_event", value: event.topic)]
                + entries.filter { !$0.1.isEmpty }.map { PushV1.DataEntry(key: $0.0, value: $0.1) }
        }
        switch event.topic {
        case EventTopic.giftReceived:
            let gift = try GiftsV1.GiftReceivedEvent(protobufBytes: event.payload)
            return Facts(
                appID: gift.appId, recipient: gift.recipientId,
                values: [
                    "sender_name": someone(gift.senderDisplayName),
                    "gift_name": gift.giftTypeName.isEmpty ? gift.giftTypeKey : gift.giftTypeName,
                ], data: data(("gift_id", gift.giftId), ("sender_id", gift.senderId)))
        case EventTopic.requestReceived:
            let request = try GiftsV1.GiftRequestReceivedEvent(protobufBytes: event.payload)
            return Facts(
                appID: request.appId, recipient: request.recipientId,
                values: [
                    "sender_name": someone(request.requesterDisplayName),
                    "gift_name": request.giftTypeName.isEmpty ? request.giftTypeKey : request.giftTypeName,
                ], data: data(("request_id", request.requestId), ("sender_id", request.requesterId)))
        case EventTopic.friendRequestReceived:
            let request = try SocialV1.FriendRequestReceivedEvent(protobufBytes: event.payload)
            return Facts(
                appID: request.appId, recipient: request.recipientId,
                values: ["sender_name": someone(request.senderDisplayName)],
                data: data(("sender_id", request.senderId), ("list_id", request.listId)))
        case EventTopic.achievementUnlocked:
            let unlock = try LeaderboardsV1.AchievementUnlockedEvent(protobufBytes: event.payload)
            return Facts(
                appID: unlock.appId, recipient: unlock.userId,
                values: [
                    "achievement_name": unlock.achievementName.isEmpty ? unlock.achievementKey : unlock.achievementName
                ], data: data(("achievement_key", unlock.achievementKey)))
        default:
            return nil
        }
    }

    /// Players without a display name still read as a person in the text.
    private static func someone(_ name: String) -> String { name.isEmpty ? "Someone" : name }

    private static func fields(_ event: EventsV1.Event, _ error: any Error) -> [(String, String)] {
        [("event_id", event.eventId), ("topic", event.topic), ("source", event.source), ("error", "\(error)")]
    }
}
