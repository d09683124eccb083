import Foundation
import RaveEvents
import RaveMessages
import RavePostgres

/// `identity.provider_linked`: told to other services (gifts turns share-with-gift invitations into gifts) in the
/// transaction that links a provider subject to a user, so the event exists exactly when the link does.
enum ProviderLinkEvents {
    /// Records that `subject` of `provider` (its stored name) is now linked to `userID`, made from `appID`
    /// (nil when no application is known, as for a merge started outside one).
    static func publish(
        userID: RaveID, appID: RaveID?, provider: String, subject: String, in transaction: PostgresTransaction
    ) async throws {
        let event = IdentityV1.ProviderLinkedEvent(
            userId: userID.hex, appId: appID?.hex ?? "", provider: ProviderName.provider(provider), subject: subject,
            linkedAtUnixMs: Date().unixMilliseconds)
        try await EventOutbox.publish(
            in: transaction, topic: EventTopic.providerLinked, key: userID.hex, payload: event.protobufBytes())
    }
}
