import RaveOutbox
import RavePostgres

/// The publishing side of domain events: records an event in the service's transactional outbox.
///
/// The event leaves the service only if the transaction commits; an `EventPublisher` (or a service's own
/// dispatcher calling `EventSinks.deliver`) then sends it to every configured sink, at least once and in order
/// per key. See docs/events.md for the topics and their payload messages.
public enum EventOutbox {
    /// Records an event of `topic` for `key` (usually the affected user's `RaveID.hex`) in `transaction` and
    /// returns its event id; `payload` is the topic's protobuf message, encoded.
    @discardableResult
    public static func publish(
        in transaction: PostgresTransaction, topic: String, key: String, payload: [UInt8]
    ) async throws -> RaveID {
        try await Outbox.enqueue(in: transaction, topic: topic, key: key, payload: payload)
    }

    /// Records one event of `topic` per (key, payload), in order, in one round trip however many there are
    /// (a gift request to 20 players).
    public static func publish(
        in transaction: PostgresTransaction, topic: String, events: [(key: String, payload: [UInt8])]
    ) async throws {
        try await Outbox.enqueue(in: transaction, topic: topic, events: events)
    }

    /// Deletes every event (delivered or not) whose key or payload names one of `ids`, in an account deletion's
    /// transaction; returns how many went.
    public static func forget(naming ids: [RaveID], in transaction: PostgresTransaction) async throws -> Int {
        try await Outbox.forgetEvents(naming: ids, in: transaction)
    }
}

/// The topic names of docs/events.md, so publishers and sinks spell them the same way.
public enum EventTopic {
    /// `rave.identity.v1.ProviderLinkedEvent`, keyed by the user who linked the provider.
    public static let providerLinked = "identity.provider_linked"
    /// `rave.gifts.v1.GiftsSentEvent`, keyed by the sender: one event per send, with every gift it made.
    public static let giftsSent = "gifts.gifts_sent"
    /// `rave.gifts.v1.GiftRequestsSentEvent`, keyed by the requester: one event per request call.
    public static let giftRequestsSent = "gifts.requests_sent"
    /// `rave.gifts.v1.GiftReceivedEvent`, keyed by the recipient; superseded by `giftsSent`, still consumed by push
    /// (events an older gifts wrote), and the notification template topic of a received gift.
    public static let giftReceived = "gifts.gift_received"
    /// `rave.gifts.v1.GiftRequestReceivedEvent`, keyed by the user asked for a gift; superseded by
    /// `giftRequestsSent` as `giftReceived` is by `giftsSent`.
    public static let requestReceived = "gifts.request_received"
    /// `rave.gifts.v1.GiftAcceptedEvent`, keyed by the recipient who accepted the gift.
    public static let giftAccepted = "gifts.gift_accepted"
    /// `rave.social.v1.FriendRequestReceivedEvent`, keyed by the user asked to be a friend.
    public static let friendRequestReceived = "social.friend_request_received"
    /// `rave.leaderboards.v1.AchievementUnlockedEvent`, keyed by the user who unlocked it.
    public static let achievementUnlocked = "leaderboards.achievement_unlocked"
}
