import Foundation
import RaveJSON
import RaveMessages
import RavePostgres
import RaveRPC

/// Bans (docs/identity.md, "Bans"): what a refusal says, how the account to ban is found, and how a ban's before
/// and after read in the audit log.
///
/// A ban ends every session of the account in its transaction and once more right after it commits; every login
/// checks for a ban before it issues tokens and once more after its session committed. Whichever of the two
/// commits second sees the other, so no session outlives a ban, however the two interleave (each second look is a
/// new statement with a new snapshot).
enum Bans {
    /// PERMISSION_DENIED with the ban in the status details (`rave.identity.v1.BanInfo`), worded for the player.
    static func refusal(_ ban: BanRecord) -> IdentityError {
        let until = ban.until.map { " until \(timestamp($0))" } ?? ""
        return IdentityError(
            code: .permissionDenied, message: "this account is banned\(until): \(ban.reason)",
            details: ban.info.protobufBytes())
    }

    /// The account a ban of `requested` applies to, locked (`FOR UPDATE`, as a merge locks it) for the transaction:
    /// `requested` itself, or the account it was merged into.
    ///
    /// NOT_FOUND for an unknown id; ABORTED when the account was merged away meanwhile (retry).
    static func lockAccount(_ requested: RaveID, in transaction: PostgresTransaction) async throws -> RaveID {
        let store = MergeStore(database: transaction)
        guard let pointer = try await store.lockUsers([requested])[requested] else {
            throw IdentityError.notFound("no user \(requested.hex)")
        }
        guard let target = pointer else { return requested }
        // Merges point every merged id at the final target, so one step reaches the account.
        guard let targetPointer = try await store.lockUsers([target])[target], targetPointer == nil else {
            throw IdentityError.aborted("user \(target.hex) was merged meanwhile; retry")
        }
        return target
    }

    /// The ban state for the audit log: `{"banned": false}`, or the ban that applies at `now`; `requested` names
    /// the id an operator gave when it was a merged-away one.
    static func state(_ ban: BanRecord?, at now: Date, requested: RaveID? = nil) -> String {
        var fields: [(String, String)] = []
        if let ban, ban.applies(at: now) {
            fields = [
                ("banned", "true"), ("reason", JSONString.quoted(ban.reason)),
                ("until_unix_ms", String(ban.until?.unixMilliseconds ?? 0)),
            ]
        } else {
            fields = [("banned", "false")]
        }
        if let requested { fields.append(("requested_user_id", JSONString.quoted(requested.hex))) }
        return "{" + fields.map { "\(JSONString.quoted($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }

    /// "2030-05-01T12:00:00Z".
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// The end of a ban as `BanUser` gives it: 0 is none; otherwise after `now` and at most 100 years ahead.
    static func end(_ untilUnixMs: Int64, now: Date) throws(IdentityError) -> Date? {
        guard untilUnixMs != 0 else { return nil }
        let latest = now.addingTimeInterval(100 * 365.25 * 24 * 3600)
        guard untilUnixMs > now.unixMilliseconds, untilUnixMs <= latest.unixMilliseconds else {
            throw .invalidArgument(
                "until_unix_ms must be 0 (a ban until lifted) or a time after now and at most 100 years ahead "
                    + "(\(now.unixMilliseconds + 1)…\(latest.unixMilliseconds)), got \(untilUnixMs)")
        }
        return Date(unixMilliseconds: untilUnixMs)
    }
}
