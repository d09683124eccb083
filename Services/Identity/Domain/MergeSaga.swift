import Foundation
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC

/// Starts account merges: the durable saga of DESIGN.md §7, owned by identity.
///
/// `merge(source:into:appID:in:)` writes the merge record, moves identity-owned data and enqueues one outbox event per
/// participant service, all in the caller's transaction, so either the whole merge happened or none of it did.
/// `MergeDelivery` then calls each participant's `MergeUsers` until it acknowledges.
struct MergeSaga: Sendable {
    /// The outbox topic of merge events; the event key is the participant's name, so merges reach one
    /// participant in the order they happened (a merge A→B is applied before B→C).
    static let topic = "rave.merge.v1.MergeParticipant/MergeUsers"

    let participants: [String]
    /// Decides whether a ban still applies.
    let clock: @Sendable () -> Date

    /// The outcome of a merge request.
    struct Outcome: Sendable {
        var mergeID: RaveID
        var target: RaveID
        /// False when the source had already been merged (a no-op).
        var performed: Bool
    }

    /// Merges `source` into `target` inside `transaction`.
    ///
    /// A source that was already merged is a no-op that returns the earlier merge. A banned user takes no part in a
    /// merge (PERMISSION_DENIED with the ban): the sessions a merge moves would escape the ban, and a ban must stay on
    /// the account it names; nor does a user being deleted (FAILED_PRECONDITION). Each provider link that moves to the
    /// target is published as `identity.provider_linked` from `appID`, the application the merge was made in.
    func merge(
        source: RaveID, into target: RaveID, appID: RaveID?, in transaction: PostgresTransaction
    ) async throws -> Outcome {
        let store = MergeStore(database: transaction)
        let locked = try await store.lockUsers([source, target])
        guard let sourcePointer = locked[source] else { throw IdentityError.notFound("no user \(source.hex)") }
        guard let targetPointer = locked[target] else { throw IdentityError.notFound("no user \(target.hex)") }
        if let earlier = sourcePointer {
            guard let mergeID = try await store.mergeID(source: source) else {
                throw IdentityError.internalError(
                    "user \(source.hex) is merged into \(earlier.hex) without a merge record")
            }
            return Outcome(mergeID: mergeID, target: earlier, performed: false)
        }
        guard targetPointer == nil else {
            throw IdentityError.aborted("user \(target.hex) was merged meanwhile; retry")
        }
        guard source != target else { throw IdentityError.failedPrecondition("a user cannot be merged into itself") }
        // Read after both users are locked, as a ban locks its user: a ban either committed before (seen here) or
        // waits for this merge and then bans the merged account.
        let bans = BanStore(database: transaction)
        for user in [target, source] {
            if let ban = try await bans.ban(of: user), ban.applies(at: clock()) { throw Bans.refusal(ban) }
        }
        // A user being deleted takes no part either: its data is, or is about to be, erased.
        try await AccountDeletions.refuseMerge(of: [target, source], in: transaction)

        let mergeID = RaveID.random()
        try await store.insert(id: mergeID, source: source, target: target, participants: participants)
        for link in try await store.moveData(from: source, to: target, mergeID: mergeID) {
            try await ProviderLinkEvents.publish(
                userID: target, appID: appID, provider: link.provider, subject: link.subject, in: transaction)
        }
        let request = MergeV1.MergeUsersRequest(
            mergeId: mergeID.hex, sourceUserId: source.hex, targetUserId: target.hex)
        for participant in participants {
            try await Outbox.enqueue(
                in: transaction, topic: Self.topic, key: participant, payload: request.protobufBytes())
        }
        return Outcome(mergeID: mergeID, target: target, performed: true)
    }
}
