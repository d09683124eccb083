import Glibc
import RaveDynamic

/// `ravectl admin NOUN VERB`: the operators' definitions (applications, lists, leaderboards, achievements, gift
/// types, games, currencies, deposits) as named commands over the `<Area>Admin` methods, JSON in and out.
///
/// Each command is `ravectl call` of one admin method with the admin client certificate, so the request is
/// the method's protobuf JSON and the gateway checks the credential.
enum AdminCommand {
    /// One admin command: `ravectl admin <noun> <verb>` calls `method`.
    struct Entry {
        var noun: String
        var verb: String
        var method: String
        var summary: String
    }

    static let entries: [Entry] = [
        Entry(
            noun: "publisher", verb: "create", method: "rave.identity.v1.IdentityAdmin/CreatePublisher",
            summary: "a publisher (owner of applications)"),
        Entry(
            noun: "publisher", verb: "update", method: "rave.identity.v1.IdentityAdmin/UpdatePublisher",
            summary: "a publisher's settings"),
        Entry(
            noun: "application", verb: "create", method: "rave.identity.v1.IdentityAdmin/CreateApplication",
            summary: "an application of a publisher"),
        Entry(
            noun: "application", verb: "update", method: "rave.identity.v1.IdentityAdmin/UpdateApplication",
            summary: "an application's settings"),
        Entry(
            noun: "application", verb: "get", method: "rave.identity.v1.IdentityAdmin/GetApplication",
            summary: "one application"),
        Entry(
            noun: "application", verb: "set-origins", method: "rave.identity.v1.IdentityAdmin/UpdateApplication",
            summary: "only an application's allowed web origins (CORS), e.g. "
                + "{\"appId\": \"…\", \"allowedOrigins\": {\"origins\": [\"https://game.example\"]}}"),
        Entry(
            noun: "merge", verb: "status", method: "rave.identity.v1.IdentityAdmin/GetMergeStatus",
            summary: "the state of a user merge"),
        Entry(
            noun: "user", verb: "get", method: "rave.identity.v1.IdentityAdmin/GetUser",
            summary: "a user's account and ban"),
        Entry(
            noun: "user", verb: "ban", method: "rave.identity.v1.IdentityAdmin/BanUser",
            summary: "bans a player (ends every session; logins refused until it ends or is lifted)"),
        Entry(
            noun: "user", verb: "unban", method: "rave.identity.v1.IdentityAdmin/UnbanUser",
            summary: "lifts a player's ban"),
        Entry(
            noun: "user", verb: "search", method: "rave.identity.v1.IdentityAdmin/SearchUsers",
            summary: "players by Rave ID, username or email (exact, without case)"),
        Entry(
            noun: "user", verb: "sessions", method: "rave.identity.v1.IdentityAdmin/ListUserSessions",
            summary: "a player's live sessions"),
        Entry(
            noun: "user", verb: "revoke-sessions", method: "rave.identity.v1.IdentityAdmin/RevokeUserSessions",
            summary: "ends one session of a player, or every session without session_id"),
        Entry(
            noun: "user", verb: "reset-two-factor", method: "rave.identity.v1.IdentityAdmin/ResetTwoFactor",
            summary: "removes a player's two-factor (lost authenticator) and ends every session"),
        Entry(
            noun: "audit", verb: "list", method: "rave.identity.v1.IdentityAdmin/ListAuditEvents",
            summary: "the audit log of operator actions, newest first"),
        Entry(
            noun: "operator", verb: "create", method: "rave.identity.v1.IdentityAdmin/CreateOperator",
            summary: "an operator account (email, role, publisher); prints its single-use enrolment code"),
        Entry(
            noun: "operator", verb: "enroll", method: "rave.identity.v1.Identity/OperatorEnroll",
            summary: "sets an operator's password with its enrolment code; prints the TOTP secret once"),
        Entry(
            noun: "operator", verb: "login", method: "rave.identity.v1.Identity/OperatorLogin",
            summary: "email, password and TOTP code; prints the operator's tokens (use --token ACCESS_TOKEN)"),
        Entry(
            noun: "operator", verb: "list", method: "rave.identity.v1.IdentityAdmin/ListOperators",
            summary: "operator accounts in the caller's publisher scope"),
        Entry(
            noun: "operator", verb: "disable", method: "rave.identity.v1.IdentityAdmin/DisableOperator",
            summary: "disables an operator for good (every session ends at once)"),
        Entry(
            noun: "operator", verb: "set-role", method: "rave.identity.v1.IdentityAdmin/SetOperatorRole",
            summary: "changes an operator's role and publisher scope (its sessions end)"),
        Entry(
            noun: "deletion", verb: "list", method: "rave.identity.v1.IdentityAdmin/ListAccountDeletions",
            summary: "account deletions, newest first (filter by status or user)"),
        Entry(
            noun: "deletion", verb: "force", method: "rave.identity.v1.IdentityAdmin/ForceAccountDeletion",
            summary: "deletes an account now, skipping the grace period (audited; cannot be undone)"),
        Entry(
            noun: "deletion", verb: "cancel", method: "rave.identity.v1.IdentityAdmin/CancelAccountDeletion",
            summary: "cancels a scheduled account deletion (audited)"),
        Entry(
            noun: "list", verb: "create", method: "rave.social.v1.SocialAdmin/CreateList",
            summary: "a social list definition"),
        Entry(
            noun: "list", verb: "get", method: "rave.social.v1.SocialAdmin/GetLists",
            summary: "the list definitions of an application"),
        Entry(
            noun: "leaderboard", verb: "define", method: "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard",
            summary: "a leaderboard (created or updated)"),
        Entry(
            noun: "leaderboard", verb: "rebuild-index",
            method: "rave.leaderboards.v1.LeaderboardsAdmin/RebuildIndex", summary: "a board's rank index"),
        Entry(
            noun: "achievement", verb: "define", method: "rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement",
            summary: "an achievement (created or updated)"),
        Entry(
            noun: "gift-type", verb: "create", method: "rave.gifts.v1.GiftsAdmin/CreateGiftType",
            summary: "a gift type"),
        Entry(
            noun: "gift-type", verb: "update", method: "rave.gifts.v1.GiftsAdmin/UpdateGiftType",
            summary: "a gift type's settings"),
        Entry(
            noun: "gift-type", verb: "list", method: "rave.gifts.v1.GiftsAdmin/ListGiftTypes",
            summary: "the gift types of an application"),
        Entry(
            noun: "gift-type", verb: "get", method: "rave.gifts.v1.GiftsAdmin/GetGiftType",
            summary: "one gift type"),
        Entry(
            noun: "currency", verb: "create", method: "rave.wallet.v1.WalletAdmin/CreateCurrency",
            summary: "a currency and its decimals"),
        Entry(
            noun: "game", verb: "create", method: "rave.wallet.v1.WalletAdmin/CreateGame",
            summary: "a game and its betting math (answers its return to player)"),
        Entry(
            noun: "eligibility", verb: "set", method: "rave.wallet.v1.WalletAdmin/SetEligibility",
            summary: "the countries where an application allows real-money play"),
        Entry(
            noun: "wallet", verb: "deposit", method: "rave.wallet.v1.WalletAdmin/Deposit",
            summary: "money into a user's wallet (idempotent by operation id)"),
        Entry(
            noun: "wallet", verb: "withdraw", method: "rave.wallet.v1.WalletAdmin/Withdraw",
            summary: "money out of a user's wallet"),
        Entry(
            noun: "wallet", verb: "adjust", method: "rave.wallet.v1.WalletAdmin/Adjust",
            summary: "a correction with a recorded reason"),
        Entry(
            noun: "wallet", verb: "get", method: "rave.wallet.v1.WalletAdmin/GetUserWallet",
            summary: "a user's balances"),
        Entry(
            noun: "push", verb: "send", method: "rave.push.v1.PushAdmin/SendNotification",
            summary: "a notification to users"),
        Entry(
            noun: "push", verb: "deliveries", method: "rave.push.v1.PushAdmin/GetDeliveries",
            summary: "the deliveries of a notification"),
    ]

    /// Where `make certs` puts the admin credential; used when no --cert is given.
    static let defaultCertificate = (certificate: ".run/certs/admin.pem", key: ".run/certs/admin-key.pem")

    static let usage = "ravectl admin NOUN VERB [--json '{…}' | JSON on stdin] \(GatewayTarget.usage)"

    static var help: String {
        let width = entries.map { $0.noun.count + $0.verb.count + 1 }.max() ?? 0
        let lines = entries.map { entry in
            let name = "\(entry.noun) \(entry.verb)"
            return
                "      \(name)\(String(repeating: " ", count: width - name.count))  \(entry.summary) (\(entry.method))"
        }
        return """
            \(usage)
              Operator commands: each calls one admin method through the gateway with the admin client
              certificate (--cert/--key, default \(defaultCertificate.certificate) when it exists). The request is
              the method's protobuf JSON, as for `ravectl call`; the response is printed the same way.
              `ravectl admin NOUN VERB --help` shows the request's fields.
            commands:
            \(lines.joined(separator: "\n"))
            \(GatewayTarget.help)
            """
    }

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let words = Array(arguments.prefix { !$0.hasPrefix("-") })
        if words.isEmpty {
            print(help)
            return arguments.contains("--help") || arguments.contains("-h") ? 0 : 2
        }
        guard words.count == 2, let entry = entries.first(where: { $0.noun == words[0] && $0.verb == words[1] })
        else {
            throw UsageError("unknown admin command \"\(words.joined(separator: " "))\"\n\n\(help)")
        }
        var rest = arguments.dropFirst(2)
        if rest.contains("--help") || rest.contains("-h") {
            print("ravectl admin \(entry.noun) \(entry.verb): \(entry.summary)\n  calls \(entry.method)")
            print(fieldsHelp(method: entry.method))
            return 0
        }
        // An operator's token is the credential when given; the admin certificate otherwise.
        if !rest.contains("--cert") && !rest.contains("--token") && access(defaultCertificate.certificate, R_OK) == 0 {
            rest += ["--cert", defaultCertificate.certificate, "--key", defaultCertificate.key]
        }
        return try await CallCommand.run([entry.method] + rest)
    }

    /// The request message's fields, one per line, from the descriptors.
    private static func fieldsHelp(method: String) -> String {
        guard let descriptor = try? DescriptorRegistry.shared.method(method) else {
            return "  (this build does not know the method's request type)"
        }
        let fields = descriptor.request.fields.map { "    \($0.jsonName): \($0.typeDescription)" }
        return "  request \(descriptor.request.fullName) fields:\n" + fields.joined(separator: "\n")
    }
}
