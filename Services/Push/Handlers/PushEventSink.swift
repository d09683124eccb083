import RaveEvents
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry

/// rave.events.v1.EventSink for push: gift, gift request, friend request and achievement events become
/// notifications to their recipients, worded by the app's templates (docs/push.md, "Event notifications").
///
/// Each event's notifications (one per recipient of a send's "gifts.gifts_sent"), deliveries and inbox entries
/// commit in the transaction that marks the event processed, so a redelivered event never notifies twice.
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

/// Turns one event into notifications: the recipients, the placeholder values, and the app's texts.
struct EventNotifications: Sendable {
    let dependencies: PushDependencies
    let logger: Logger

    /// What a consumed event says to one recipient, independent of its payload type.
    struct Facts {
        /// The notification's id: the event id for a single-recipient event, the gift's or request's id for each
        /// recipient of a fanned-out one (unique, and the same on every redelivery).
        var notificationID: String
        /// The topic whose templates word the text (a fanned-out event is worded as its per-recipient topic).
        var topic: String
        var appID: String
        var recipient: String
        var values: [String: String]
        var data: [PushV1.DataEntry]
    }

    /// Stores the notifications for `event` in `transaction` (one per recipient of a fanned-out event); false for
    /// topics push does not consume.
    ///
    /// An event that cannot become a notification (an undecodable payload, a malformed recipient, a text over
    /// the providers' limit) is logged and counted as handled: retrying it would never succeed and would hold
    /// back the later events of its key. In a fanned-out event that skips only the recipient concerned.
    func notify(about event: EventsV1.Event, in transaction: PostgresTransaction) async throws -> Bool {
        let recipients: [Facts]?
        do {
            recipients = try Self.facts(of: event)
        } catch {
            logger.error("dropping an undecodable event", Self.fields(event, error))
            return true
        }
        guard let recipients else { return false }
        for facts in recipients {
            do {
                try await notify(facts, in: transaction)
            } catch let error as PushError where error.kind == .invalidArgument {
                logger.error(
                    "dropping a notification push cannot send",
                    Self.fields(event, error) + [("recipient", facts.recipient.prefix(64).description)])
            } catch is ErasureError {
                // A deleted account is not notified (docs/push.md, "Deleting an account"); redelivering would not
                // change that.
                logger.info("not notifying a deleted account", Self.fields(event, ErasureError.erased))
            }
        }
        return true
    }

    /// Stores one recipient's notification, worded by the app's templates in the recipient's device languages.
    private func notify(_ facts: Facts, in transaction: PostgresTransaction) async throws {
        // The recipient may have been merged away since the event was published: its devices are the target's.
        let recipient = try await dependencies.player(facts.recipient, field: "recipient")
        let context = try await dependencies.templates.forEvent(
            appID: facts.appID, topic: facts.topic, user: recipient, on: transaction)
        guard
            let text = EventTemplates.notificationText(
                topic: facts.topic, values: facts.values, deviceLanguages: context.deviceLanguages,
                appTemplates: context.templates, defaultLanguage: context.defaultLanguage)
        else { return }
        let request = PushV1.SendNotificationRequest(
            appId: facts.appID, userIds: [recipient.hex],
            notification: PushV1.Notification(
                title: text.title, body: text.body, data: facts.data, category: .normal,
                localizations: text.localizations),
            notificationId: facts.notificationID)
        _ = try await NotificationSender(dependencies: dependencies).send(request, in: transaction)
    }

    /// The facts per recipient of a consumed topic's payload; nil for other topics.
    static func facts(of event: EventsV1.Event) throws -> [Facts]? {
        func facts(
            _ id: String, _ topic: String, _ appID: String, _ recipient: String, _ values: [String: String],
            _ entries: (String, String)...
        ) -> Facts {
            let data =
                [PushV1.DataEntry(key: "rave_event", value: topic)]
                + entries.filter { !$0.1.isEmpty }.map { PushV1.DataEntry(key: $0.0, value: $0.1) }
            return Facts(
                notificationID: id, topic: topic, appID: appID, recipient: recipient, values: values, data: data)
        }
        let id = event.eventId
        switch event.topic {
        case EventTopic.giftsSent:
            let sent = try GiftsV1.GiftsSentEvent(protobufBytes: event.payload)
            let values = giftValues(sent.senderDisplayName, sent.giftTypeName, sent.giftTypeKey)
            return sent.gifts.map { gift in
                facts(
                    gift.giftId, EventTopic.giftReceived, sent.appId, gift.recipientId, values,
                    ("gift_id", gift.giftId), ("sender_id", sent.senderId))
            }
        case EventTopic.giftRequestsSent:
            let sent = try GiftsV1.GiftRequestsSentEvent(protobufBytes: event.payload)
            let values = giftValues(sent.requesterDisplayName, sent.giftTypeName, sent.giftTypeKey)
            return sent.requests.map { request in
                facts(
                    request.requestId, EventTopic.requestReceived, sent.appId, request.recipientId, values,
                    ("request_id", request.requestId), ("sender_id", sent.requesterId))
            }
        case EventTopic.giftReceived:
            let gift = try GiftsV1.GiftReceivedEvent(protobufBytes: event.payload)
            return [
                facts(
                    id, event.topic, gift.appId, gift.recipientId,
                    giftValues(gift.senderDisplayName, gift.giftTypeName, gift.giftTypeKey),
                    ("gift_id", gift.giftId), ("sender_id", gift.senderId))
            ]
        case EventTopic.requestReceived:
            let request = try GiftsV1.GiftRequestReceivedEvent(protobufBytes: event.payload)
            return [
                facts(
                    id, event.topic, request.appId, request.recipientId,
                    giftValues(request.requesterDisplayName, request.giftTypeName, request.giftTypeKey),
                    ("request_id", request.requestId), ("sender_id", request.requesterId))
            ]
        case EventTopic.friendRequestReceived:
            let request = try SocialV1.FriendRequestReceivedEvent(protobufBytes: event.payload)
            return [
                facts(
                    id, event.topic, request.appId, request.recipientId,
                    ["sender_name": someone(request.senderDisplayName)], ("sender_id", request.senderId),
                    ("list_id", request.listId))
            ]
        case EventTopic.achievementUnlocked:
            let unlock = try LeaderboardsV1.AchievementUnlockedEvent(protobufBytes: event.payload)
            return [
                facts(
                    id, event.topic, unlock.appId, unlock.userId,
                    [
                        "achievement_name": unlock.achievementName.isEmpty
                            ? unlock.achievementKey : unlock.achievementName
                    ], ("achievement_key", unlock.achievementKey))
            ]
        default:
            return nil
        }
    }

    /// The placeholders of a gift or a gift request: who and what.
    private static func giftValues(_ senderName: String, _ typeName: String, _ typeKey: String) -> [String: String] {
        ["sender_name": someone(senderName), "gift_name": typeName.isEmpty ? typeKey : typeName]
    }

    /// Players without a display name still read as a person in the text.
    private static func someone(_ name: String) -> String { name.isEmpty ? "Someone" : name }

    private static func fields(_ event: EventsV1.Event, _ error: any Error) -> [(String, String)] {
        [("event_id", event.eventId), ("topic", event.topic), ("source", event.source), ("error", "\(error)")]
    }
}
