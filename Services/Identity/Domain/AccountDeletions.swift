import Foundation
import RaveJSON
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC

/// Account deletion, the second saga identity owns (docs/identity.md, "Deleting an account").
///
/// A deletion is scheduled (the player's DeleteAccount, after the grace period) or forced (an operator, now); a
/// login of the account cancels a scheduled one. When it is due, `start(_:in:)` erases identity's own data for the
/// user and every id merged into it and enqueues one `EraseUser` per participant (the merge participants), in one
/// transaction; `MergeDelivery` calls each participant until it acknowledges, and the last acknowledgement
/// completes the deletion (`AccountDeletionStore.completeIfAcknowledged`).
///
/// Locks are taken in one order everywhere, the deletion's row before the users' rows (`FOR UPDATE`), so a login
/// cancelling, a merge, an operator and the poller starting the same deletion never deadlock.
struct AccountDeletions: Sendable {
    /// The outbox topic of erasure events; the key is the participant's name, as for merges, so a participant sees
    /// a merge into the user before the user's erasure.
    static let topic = "rave.erasure.v1.ErasureParticipant/EraseUser"
    /// How recent the login of a caller without a password must be for DeleteAccount to accept it.
    static let recentLogin: TimeInterval = 300

    let participants: [String]
    /// The time between the request and the erasure (`RAVE_IDENTITY_DELETION_GRACE`).
    let grace: TimeInterval
    let clock: @Sendable () -> Date

    // MARK: - Scheduling

    /// Schedules the deletion of `requested`'s account (resolved through merges) after the grace period, or, for an
    /// operator, starts it now; in `transaction`.
    ///
    /// A player's request ends every session of the account (reason `deletion`, on the revocation feed) and is
    /// ALREADY_EXISTS when a deletion is already scheduled. An operator's starts a scheduled one at once and
    /// answers a started one as it is.
    func request(
        _ requested: RaveID, by requester: IdentityV1.AccountDeletionRequester, in transaction: PostgresTransaction
    ) async throws -> (deletion: AccountDeletionRecord, endedSessions: Int) {
        guard let account = try await UserStore(database: transaction).canonicalIDs([requested])[requested] else {
            throw IdentityError.notFound("no user \(requested.hex)")
        }
        let store = AccountDeletionStore(database: transaction)
        let live = try await store.live(userID: account)
        guard try await Bans.lockAccount(account, in: transaction) == account else {
            throw IdentityError.aborted("user \(account.hex) was merged meanwhile; retry")
        }
        if let live {
            switch (live.status, requester) {
            case (.scheduled, .player): throw IdentityError.alreadyExists("the account's deletion is already scheduled")
            case (.scheduled, _): try await start(live.id, in: transaction)
            case (_, .player): throw IdentityError.failedPrecondition("the account is being deleted")
            default: break  // An operator forcing a started deletion: answered as it is.
            }
            return (try await store.deletion(live.id) ?? live, 0)
        }
        let now = clock()
        let due = requester == .player ? now.addingTimeInterval(grace) : now
        let scheduled = try await store.schedule(userID: account, requestedBy: requester, at: now, due: due)
        if requester == .operator {
            try await start(scheduled.id, in: transaction)
            return (try await store.deletion(scheduled.id) ?? scheduled, 0)
        }
        let ended = try await SessionStore(database: transaction).revokeOthers(
            userID: account, keeping: nil, reason: "deletion")
        return (scheduled, ended)
    }

    /// Cancels the scheduled deletion of `userID`, which just logged in (opened a session); true when one was
    /// cancelled.
    ///
    /// ABORTED when the account was deleted meanwhile (the deletion started while the login ran): the login must
    /// not go on, and a retry finds no account (a guest login then plays as a new user).
    func cancelOnLogin(_ userID: RaveID, database: any PostgresQueryable) async throws -> Bool {
        let store = AccountDeletionStore(database: database)
        if try await store.cancel(userID: userID, at: clock(), by: "login") { return true }
        if try await store.isDeleted(userID) {
            throw IdentityError.aborted("this account was deleted while logging in; log in again")
        }
        return false
    }

    // MARK: - Erasing

    /// Starts the scheduled deletion `id`.
    ///
    /// Erases identity's data for the user and every id merged into it, marks it started with a new tombstone id and
    /// enqueues `EraseUser` for each participant (completed at once when there is none). False when it is no longer
    /// scheduled (cancelled, or started by another replica).
    @discardableResult
    func start(_ id: RaveID, in transaction: PostgresTransaction) async throws -> Bool {
        let store = AccountDeletionStore(database: transaction)
        guard let userID = try await store.lockScheduled(id) else { return false }
        let erasure = AccountErasureStore(database: transaction)
        guard let merged = try await erasure.lock(userID) else {
            throw IdentityError.internalError("deletion \(id.hex) names no user \(userID.hex)")
        }
        var tombstone = RaveID.random()
        // 128 random bits do not collide, but "never a user id" (deleted ones included) is cheap to make certain.
        while try await erasure.isUser(tombstone) {
            tombstone = RaveID.random()
        }
        try await erasure.erase([userID] + merged)
        try await store.markStarted(
            id, at: clock(), tombstone: tombstone, mergedUserIDs: merged, completed: participants.isEmpty)
        // The event names the deletion only: the delivery reads the rest from it while it is started, so no
        // event links the user to the tombstone once the deletion completes.
        let event = ErasureV1.EraseUserRequest(erasureId: id.hex).protobufBytes()
        for participant in participants {
            try await Outbox.enqueue(in: transaction, topic: Self.topic, key: participant, payload: event)
            try await store.addParticipant(deletionID: id, participant: participant)
        }
        return true
    }

    /// Starts the scheduled deletions due now, each in its own transaction, up to `limit`; how many started.
    ///
    /// One that fails to start does not hold the others back: the first failure is thrown after the rest were
    /// tried (the poller tries it again at its next round).
    func startDue(pool: PostgresPool, limit: Int = 100) async throws -> Int {
        let due = try await AccountDeletionStore(database: pool).due(at: clock(), limit: limit)
        var started = 0
        var failure: (any Error)?
        for id in due {
            do {
                if try await pool.transaction({ try await start(id, in: $0) }) { started += 1 }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return started
    }

    /// A deletion's state for the audit log: `{"status": "none"}`, or its id, status and due time; `requested`
    /// names the id an operator gave when it was a merged-away one.
    static func state(_ deletion: AccountDeletionRecord?, requested: RaveID) -> String {
        var fields: [(String, String)] = [("status", JSONString.quoted("none"))]
        if let deletion {
            fields = [
                ("deletion_id", JSONString.quoted(deletion.id.hex)),
                ("status", JSONString.quoted(AccountDeletionStore.name(deletion.status))),
                ("due_at_unix_ms", String(deletion.message.dueAtUnixMs)),
            ]
        }
        if let deletion, deletion.userID != requested {
            fields.append(("requested_user_id", JSONString.quoted(requested.hex)))
        }
        return "{" + fields.map { "\(JSONString.quoted($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }

    /// FAILED_PRECONDITION when one of `users` is deleted or has a deletion in progress.
    ///
    /// Such a user takes no part in a merge (its data is, or is about to be, erased). Called with the users locked.
    static func refuseMerge(of users: [RaveID], in transaction: PostgresTransaction) async throws {
        if let user = try await AccountDeletionStore(database: transaction).beingDeleted(users).first {
            throw IdentityError.failedPrecondition(
                "user \(user.hex) is being deleted (or was); it takes no part in merges")
        }
    }
}
