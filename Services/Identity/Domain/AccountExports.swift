import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC

/// How exports are limited, retried and kept (docs/identity.md, "Exporting an account").
struct AccountExportPolicy: Sendable {
    /// How long a ready archive may be downloaded before the worker deletes it (`RAVE_IDENTITY_EXPORT_RETENTION`).
    var retention: TimeInterval = 7 * 24 * 3600
    /// A player may ask for one new export per this window (failed exports do not count; operators are not limited).
    var requestWindow: TimeInterval = 24 * 3600
    /// How long an export may keep failing (a participant down) before it is failed.
    var failureWindow: TimeInterval = 3600
    /// The first retry's wait after a failure; it doubles per attempt up to `maximumBackoff`.
    var initialBackoff: TimeInterval = 5
    var maximumBackoff: TimeInterval = 300
    /// How long a worker holds a claimed export before another replica may take it over.
    var lease: TimeInterval = 600
    /// How often the worker looks for pending and expired exports.
    var pollInterval: Duration = .seconds(5)
    /// The largest archive assembled (it is built in memory); a larger one fails the export.
    var maximumArchiveBytes = 256 << 20

    /// The wait before attempt `attempts + 1`.
    func backoff(afterAttempts attempts: Int) -> TimeInterval {
        min(maximumBackoff, initialBackoff * pow(2, Double(max(0, min(attempts - 1, 30)))))
    }
}

/// Asking for exports: one in progress per user, a player's new exports limited per window.
enum AccountExports {
    /// Answers the user's export in progress, or starts a new one (`created`).
    ///
    /// RESOURCE_EXHAUSTED when a player asked for one within the window. Runs in `transaction`.
    static func request(
        userID: RaveID, by requester: IdentityV1.AccountExportRequester, appID: RaveID?, language: String,
        policy: AccountExportPolicy, now: Date, in transaction: PostgresTransaction
    ) async throws -> (export: AccountExportRecord, created: Bool) {
        let store = AccountExportStore(database: transaction)
        if let pending = try await store.pending(userID: userID) { return (pending, false) }
        if requester == .player,
            let latest = try await store.latestCounted(userID: userID, since: now - policy.requestWindow)
        {
            let wait = Int((latest + policy.requestWindow).timeIntervalSince(now).rounded(.up))
            throw IdentityError.resourceExhausted(
                "one data export per \(Int(policy.requestWindow / 3600)) hours; the next may be asked for in "
                    + "\(max(1, wait)) s")
        }
        if let created = try await store.insert(
            userID: userID, requestedBy: requester, appID: appID, language: language, at: now)
        {
            return (created, true)
        }
        // Two requests at once: the partial unique index let the other insert (this insert waited for its commit and
        // did nothing), so its export is the one in progress.
        guard let pending = try await store.pending(userID: userID) else {
            throw IdentityError.aborted("another export request of this account was under way; retry")
        }
        return (pending, false)
    }

    /// The mail that says an export is ready, in the app's template for the language (else the built-in text).
    static func readyMail(
        to email: String, application: ApplicationRecord, languages: [String], now: Date, expiresAt: Date,
        in transaction: PostgresTransaction
    ) async throws -> IdentityMail.Outgoing {
        let kind = IdentityMail.Kind.exportReady
        let template =
            try await MailStore(database: transaction).template(
                appID: application.id, kind: kind.rawValue, languages: languages) ?? IdentityMail.builtIn(kind)
        let days = Int((expiresAt.timeIntervalSince(now) / 86_400).rounded())
        func render(_ text: String) -> String {
            IdentityMail.render(text, code: "", appName: application.name, minutes: 0)
                .replacingOccurrences(of: "{{expires_at}}", with: ExportArchive.timestamp(expiresAt))
                .replacingOccurrences(of: "{{days}}", with: String(max(days, 0)))
        }
        return IdentityMail.Outgoing(
            kind: kind, to: email,
            fromName: String(application.name.unicodeScalars.filter { $0.properties.generalCategory != .control }),
            subject: render(template.subject), body: render(template.body))
    }
}
