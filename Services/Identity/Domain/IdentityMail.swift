import Foundation
import RaveCrypto
import RaveMail
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveTelemetry

/// Identity's mails (docs/identity.md, "Email"): the codes they carry, their text, and their way out.
///
/// A mail is written to the outbox (topic `identity.mail`, key `mail:<user id>`) in the transaction of the flow that
/// causes it, its text sealed with the secret key ring (bound to the key), and sent by the outbox's dispatcher
/// (`MergeDelivery`) over SMTP, retried with backoff until the server accepts it. Without SMTP settings a mail is
/// logged as not sent (recipient and kind, never the text) and counts as delivered.
enum IdentityMail {
    static let topic = "identity.mail"

    /// What a mail is for; names the template kind.
    enum Kind: String, Sendable, Codable {
        case verifyEmail = "verify_email"
        case passwordReset = "password_reset"
        /// Says an account export is ready; carries no code.
        case exportReady = "export_ready"

        /// Digits of the code: a reset code is guessed without a session, so it is longer.
        var digits: Int { self == .verifyEmail ? 6 : 8 }

        init?(_ kind: IdentityV1.MailKind) {
            switch kind {
            case .verifyEmail: self = .verifyEmail
            case .passwordReset: self = .passwordReset
            case .exportReady: self = .exportReady
            default: return nil
            }
        }
    }

    /// The sealed part of an outbox row.
    struct Outgoing: Sendable, Codable, Hashable {
        var kind: Kind
        var to: String
        var fromName: String
        var subject: String
        var body: String
    }

    /// The text mails use when the application has no template of their kind and language.
    static func builtIn(_ kind: Kind) -> (subject: String, body: String) {
        switch kind {
        case .verifyEmail:
            (
                "{{code}} is your {{app_name}} verification code",
                """
                Hello,

                Your code to verify this email address for {{app_name}} is:

                    {{code}}

                It expires in {{minutes}} minutes. If you did not ask for it, ignore this mail.
                """
            )
        case .passwordReset:
            (
                "Reset your {{app_name}} password",
                """
                Hello,

                Someone asked to reset the password of the {{app_name}} account of this email address. The code is:

                    {{code}}

                It expires in {{minutes}} minutes and ends every session of the account when used. If you did not \
                ask for it, ignore this mail: your password stays as it is.
                """
            )
        case .exportReady:
            (
                "Your {{app_name}} data export is ready",
                """
                Hello,

                The export of your {{app_name}} account's data that you asked for is ready. Download it from the \
                game until {{expires_at}} ({{days}} days); it is deleted afterwards.

                If you did not ask for it, change your password and contact the game's support.
                """
            )
        }
    }

    /// `template` with `{{code}}`, `{{app_name}}` and `{{minutes}}` replaced.
    static func render(_ template: String, code: String, appName: String, minutes: Int) -> String {
        template.replacingOccurrences(of: "{{code}}", with: code)
            .replacingOccurrences(of: "{{app_name}}", with: appName)
            .replacingOccurrences(of: "{{minutes}}", with: String(minutes))
    }

    /// A new random code of `digits` digits.
    static func newCode(digits: Int) throws -> String {
        var code = ""
        while code.count < digits {
            // Rejection sampling keeps every digit uniform.
            for byte in try SecureRandom.bytes(count: digits) where byte < 250 && code.count < digits {
                code.append(Character(String(byte % 10)))
            }
        }
        return code
    }

    /// What is stored of a code: an HMAC under a key derived from the primary secret key, bound to what the code is
    /// for (`subject`: the user for a verification, the login email for a reset), so a database reader cannot try
    /// the few million codes offline.
    static func hash(code: String, kind: Kind, subject: String, secrets: SecretKeyRing) -> [UInt8] {
        let key = secrets.entries[0].key.withUnsafeBytes { Array($0) }
        let macKey = Digest.hmacSHA256(key: key, message: Array("rave.identity.email_codes".utf8))
        return Digest.hmacSHA256(key: macKey, message: Array("\(kind.rawValue):\(subject.lowercased()):\(code)".utf8))
    }

    /// The associated data of a sealed mail: its outbox key.
    static func context(key: String) -> [UInt8] { Array("rave.identity.mail:\(key)".utf8) }

    /// Writes the mail to the outbox in `transaction`, sealed.
    static func enqueue(
        _ mail: Outgoing, userID: RaveID, secrets: SecretKeyRing, in transaction: PostgresTransaction
    ) async throws {
        let key = "mail:\(userID.hex)"
        let sealed = try secrets.seal(try JSONEncoder().encode(mail).map { $0 }, context: context(key: key))
        try await Outbox.enqueue(in: transaction, topic: topic, key: key, payload: sealed)
    }
}

/// Sends identity's outbox mails: over SMTP when configured, else logs them as not sent.
struct IdentityMailer: Sendable {
    let sender: SMTPSender?
    let secrets: SecretKeyRing
    let logger: Logger

    /// Sends one outbox mail; throws (so the dispatcher retries) when the server did not take it.
    ///
    /// A mail that does not open (its key left the ring), or that no server would take (a malformed address), is
    /// dropped with a warning: no retry would help.
    func deliver(_ event: OutboxEvent) async throws {
        let mail: IdentityMail.Outgoing
        do {
            let plain = try secrets.open(event.payload, context: IdentityMail.context(key: event.key))
            mail = try JSONDecoder().decode(IdentityMail.Outgoing.self, from: Data(plain))
        } catch {
            logger.warning(
                "dropping a mail that cannot be opened with RAVE_SECRET_KEY_FILE",
                [("event_id", "\(event.eventID)"), ("error", "\(error)")])
            return
        }
        let message = MailMessage(
            from: sender?.settings.from ?? "identity@localhost", fromName: mail.fromName, to: mail.to,
            subject: mail.subject, body: mail.body)
        do {
            _ = try message.rendered()
        } catch {
            // An address or text no SMTP server would take: retrying cannot help, and would hold back the key.
            logger.warning(
                "dropping a mail that cannot be sent", [("kind", mail.kind.rawValue), ("error", "\(error)")])
            return
        }
        guard let sender else {
            logger.notice(
                "mail not sent: RAVE_IDENTITY_SMTP_URL is not set", [("kind", mail.kind.rawValue), ("to", mail.to)])
            return
        }
        try await sender.send(message)
        logger.info("mail sent", [("kind", mail.kind.rawValue), ("to", mail.to)])
    }
}

/// How long codes live, how many wrong ones kill a code, and how many mails may be asked for (docs/identity.md,
/// "Email").
struct MailPolicy: Sendable {
    var verificationLifetime: TimeInterval = 1800
    var resetLifetime: TimeInterval = 1800
    /// Wrong codes after which a code is dead.
    var maximumAttempts = 5
    /// The window of the mail limits below.
    var window: TimeInterval = 3600
    /// Verification mails per account (SignUp's included) per window.
    var verificationMailsPerAccount = 5
    /// Password reset requests per email per window.
    var resetsPerEmail = 5
    /// Password reset requests per client address (IPv6: per /64) per window.
    var resetsPerAddress = 30

    func lifetime(_ kind: IdentityMail.Kind) -> TimeInterval {
        kind == .verifyEmail ? verificationLifetime : resetLifetime
    }
}

extension IdentityMail {
    /// The template languages to try for `language` (BCP 47; empty means English): it, its primary language, then
    /// "en", in lower case.
    static func languages(_ language: String) throws(IdentityError) -> [String] {
        let lower = language.lowercased()
        guard !lower.isEmpty else { return ["en"] }
        let parts = lower.split(separator: "-", omittingEmptySubsequences: false)
        let letters = { (part: Substring) in part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
        guard lower.count <= 35, let first = parts.first, (2...3).contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLetter }),
            parts.dropFirst().allSatisfy({ (2...8).contains($0.count) && letters($0) })
        else {
            throw .invalidArgument(
                "language must be a BCP 47 tag such as \"en\" or \"pt-BR\", got \(Validation.quoted(language))")
        }
        var chain = [lower]
        if parts.count > 1 { chain.append(String(first)) }
        if !chain.contains("en") { chain.append("en") }
        return chain
    }
}
