import Foundation
import RaveCrypto
import RaveMail
import RaveRPC
import RaveRuntime

/// Identity's own settings (`RAVE_IDENTITY_*`, `RAVE_OIDC_*`), beyond what `ServiceConfiguration` reads for every
/// service.
struct IdentityConfiguration: Sendable {
    /// A service that owns per-user data and must acknowledge every merge (`MergeUsers`).
    struct MergeParticipant: Sendable, Hashable {
        var name: String
        var host: String
        var port: Int
    }

    /// How long an access token lives; the revocation feed keeps an ended session this long (plus clock skew).
    var accessTokenLifetime: Int64 = 900
    /// How long a session (refresh-token family) lives without being refreshed.
    var sessionLifetime: TimeInterval = 30 * 24 * 3600
    /// scrypt parameters for new password hashes.
    var passwordParameters: PasswordHasher.Parameters = .default
    /// Password hashes that run at once, each on a hashing thread of its own (`PasswordHasherPool`).
    var passwordHashers = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Password attempts that may wait for a hashing thread; beyond them, RESOURCE_EXHAUSTED.
    var passwordQueue = 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Failed password and two-factor attempts per window, per address and account (`LoginThrottle`).
    var loginThrottle = LoginThrottle.Policy()
    /// Providers whose ID tokens log in; none unless configured.
    var providers: [OIDCProviderConfiguration] = []
    /// Services called with `MergeUsers` after every merge; none by default.
    var mergeParticipants: [MergeParticipant] = []
    /// How long a two-factor challenge may be completed after the first factor.
    var twoFactorChallengeLifetime: TimeInterval = 300
    /// The issuer authenticator apps show next to the account.
    var twoFactorIssuer = "Rave"
    /// The social service, asked about blocks by FindUser; nil (the default) means there is none to ask.
    var socialAddress: SocketAddress?
    /// FindUser lookups by email or username a player may make at once and per minute (`LookupLimiter`); a client
    /// address may make five times as many.
    var findUserLookupsPerMinute = 20
    /// Where identity's mails go (`RAVE_IDENTITY_SMTP_*`); nil (the default): they are logged as not sent.
    var smtp: SMTPSettings?
    /// Email code lifetimes, attempts and mail limits.
    var mail = MailPolicy()
    /// How long after DeleteAccount the account is erased (`RAVE_IDENTITY_DELETION_GRACE`); a login meanwhile
    /// cancels the deletion.
    var deletionGrace: TimeInterval = 14 * 24 * 3600
    /// How often the deletion poller looks for due deletions.
    var deletionPollInterval: Duration = .seconds(60)
    /// Account exports: retention (`RAVE_IDENTITY_EXPORT_RETENTION`), limits and retries.
    var exports = AccountExportPolicy()
    /// The keys that seal signing keys and TOTP secrets at rest (`RAVE_SECRET_KEY_FILE`); there is no default.
    var secretKeys: SecretKeyRing

    /// Default settings with `secretKeys` sealing the secrets.
    init(secretKeys: SecretKeyRing) {
        self.secretKeys = secretKeys
    }

    /// Reads `RAVE_IDENTITY_ACCESS_TOKEN_SECONDS`, `RAVE_IDENTITY_SESSION_DAYS`, `RAVE_IDENTITY_MERGE_PARTICIPANTS`,
    /// `RAVE_IDENTITY_SOCIAL_ADDRESS`, `RAVE_IDENTITY_FIND_USER_PER_MINUTE`, `RAVE_IDENTITY_DELETION_GRACE`,
    /// `RAVE_IDENTITY_EXPORT_RETENTION`, the
    /// password hashing and login throttle settings (`readPasswordSettings`) and the providers'
    /// `RAVE_OIDC_<PROVIDER>_{JWKS,AUDIENCE,ISSUER}`; unset keeps the defaults.
    init(environment: [String: String], secretKeys: SecretKeyRing) throws(IdentityError) {
        self.secretKeys = secretKeys
        if let text = environment["RAVE_IDENTITY_ACCESS_TOKEN_SECONDS"] {
            guard let seconds = Int64(text), (60...86_400).contains(seconds) else {
                throw .invalidArgument("RAVE_IDENTITY_ACCESS_TOKEN_SECONDS must be 60…86400, got \"\(text)\"")
            }
            accessTokenLifetime = seconds
        }
        if let text = environment["RAVE_IDENTITY_SESSION_DAYS"] {
            guard let days = Int(text), (1...365).contains(days) else {
                throw .invalidArgument("RAVE_IDENTITY_SESSION_DAYS must be 1…365, got \"\(text)\"")
            }
            sessionLifetime = TimeInterval(days) * 24 * 3600
        }
        if let text = environment["RAVE_IDENTITY_FIND_USER_PER_MINUTE"] {
            guard let count = Int(text), (1...100_000).contains(count) else {
                throw .invalidArgument("RAVE_IDENTITY_FIND_USER_PER_MINUTE must be 1…100000, got \"\(text)\"")
            }
            findUserLookupsPerMinute = count
        }
        if let text = environment["RAVE_IDENTITY_DELETION_GRACE"] {
            guard let grace = Self.grace(text) else {
                throw .invalidArgument(
                    "RAVE_IDENTITY_DELETION_GRACE must be a duration of 0s…365d (units s, m, h, d; e.g. 14d), "
                        + "got \"\(text)\"")
            }
            deletionGrace = grace
        }
        if let text = environment["RAVE_IDENTITY_EXPORT_RETENTION"] {
            guard let retention = Self.grace(text), retention > 0 else {
                throw .invalidArgument(
                    "RAVE_IDENTITY_EXPORT_RETENTION must be a duration of 1s…365d (units s, m, h, d; e.g. 7d), "
                        + "got \"\(text)\"")
            }
            exports.retention = retention
        }
        try readPasswordSettings(environment)
        mergeParticipants = try Self.participants(environment["RAVE_IDENTITY_MERGE_PARTICIPANTS"] ?? "")
        smtp = try Self.smtp(environment)
        if let text = environment["RAVE_IDENTITY_SOCIAL_ADDRESS"], !text.isEmpty {
            guard let address = SocketAddress(parsing: text) else {
                throw .invalidArgument("RAVE_IDENTITY_SOCIAL_ADDRESS must look like host:port, got \"\(text)\"")
            }
            socialAddress = address
        }
        do {
            providers = try OIDCProviderConfiguration.fromEnvironment(environment)
        } catch {
            throw .invalidArgument(error.message)
        }
    }

    /// A grace period: a whole number with a unit (`s`, `m`, `h`, `d`), at most 365 days; nil otherwise.
    static func grace(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int(text.dropLast()), count >= 0,
            TimeInterval(count) * unit <= 365 * 86_400
        else { return nil }
        return TimeInterval(count) * unit
    }

    /// The key ring of the file `RAVE_SECRET_KEY_FILE` names.
    ///
    /// Identity refuses to start without one (exit status 78): a default key, generated or built in, would either
    /// lose every sealed secret on restart or be a key everyone knows. `make run` creates `.run/secret-keys`.
    static func secretKeys(environment: [String: String]) throws(RuntimeError) -> SecretKeyRing {
        guard let path = environment["RAVE_SECRET_KEY_FILE"], !path.isEmpty else {
            throw RuntimeError(
                .invalidConfiguration,
                "RAVE_SECRET_KEY_FILE must name the file of keys that seal signing keys and TOTP secrets "
                    + "(one \"<key id> <base64 of 32 random bytes>\" per line; docs/OPERATIONS.md)")
        }
        do {
            return try SecretKeyRing(contentsOfFile: path)
        } catch {
            throw RuntimeError(.invalidConfiguration, "RAVE_SECRET_KEY_FILE: \(error.message)")
        }
    }

    /// `RAVE_IDENTITY_PASSWORD_HASHERS` (1…256), `RAVE_IDENTITY_PASSWORD_QUEUE` (0…10000, default twice the
    /// hashers), `RAVE_IDENTITY_LOGIN_WINDOW_SECONDS` (60…86400) and `RAVE_IDENTITY_LOGIN_FAILURES_PER_{PAIR,
    /// ACCOUNT,ADDRESS}` (1…100000).
    private mutating func readPasswordSettings(_ environment: [String: String]) throws(IdentityError) {
        func integer(_ name: String, _ range: ClosedRange<Int>) throws(IdentityError) -> Int? {
            guard let text = environment[name] else { return nil }
            guard let value = Int(text), range.contains(value) else {
                throw .invalidArgument("\(name) must be \(range.lowerBound)…\(range.upperBound), got \"\(text)\"")
            }
            return value
        }
        if let hashers = try integer("RAVE_IDENTITY_PASSWORD_HASHERS", 1...256) {
            passwordHashers = hashers
            passwordQueue = 2 * hashers
        }
        passwordQueue = try integer("RAVE_IDENTITY_PASSWORD_QUEUE", 0...10_000) ?? passwordQueue
        if let seconds = try integer("RAVE_IDENTITY_LOGIN_WINDOW_SECONDS", 60...86_400) {
            loginThrottle.window = TimeInterval(seconds)
        }
        loginThrottle.perPair =
            try integer("RAVE_IDENTITY_LOGIN_FAILURES_PER_PAIR", 1...100_000) ?? loginThrottle.perPair
        loginThrottle.perAccount =
            try integer("RAVE_IDENTITY_LOGIN_FAILURES_PER_ACCOUNT", 1...100_000) ?? loginThrottle.perAccount
        loginThrottle.perAddress =
            try integer("RAVE_IDENTITY_LOGIN_FAILURES_PER_ADDRESS", 1...100_000) ?? loginThrottle.perAddress
    }

    /// `RAVE_IDENTITY_SMTP_URL` (smtp:// or smtps://), `RAVE_IDENTITY_SMTP_FROM` (required with the URL),
    /// `RAVE_IDENTITY_SMTP_USER` with `RAVE_IDENTITY_SMTP_PASSWORD_FILE` (both or neither) and
    /// `RAVE_IDENTITY_SMTP_CA_FILE`; nil when the URL is unset or empty.
    static func smtp(_ environment: [String: String]) throws(IdentityError) -> SMTPSettings? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingWhitespace, !text.isEmpty else { return nil }
            return text
        }
        guard let url = value("RAVE_IDENTITY_SMTP_URL") else { return nil }
        guard let from = value("RAVE_IDENTITY_SMTP_FROM") else {
            throw .invalidArgument(
                "RAVE_IDENTITY_SMTP_FROM must name the sender address when RAVE_IDENTITY_SMTP_URL is set")
        }
        let user = value("RAVE_IDENTITY_SMTP_USER")
        let passwordFile = value("RAVE_IDENTITY_SMTP_PASSWORD_FILE")
        guard (user == nil) == (passwordFile == nil) else {
            throw .invalidArgument(
                "RAVE_IDENTITY_SMTP_USER and RAVE_IDENTITY_SMTP_PASSWORD_FILE are set together or not at all")
        }
        var password: String?
        if let passwordFile {
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw .invalidArgument("RAVE_IDENTITY_SMTP_PASSWORD_FILE: cannot read \(passwordFile)")
            }
            password = String(text.trimmingWhitespace)
        }
        do {
            return try SMTPSettings(
                url: url, from: from, username: user, password: password, caFile: value("RAVE_IDENTITY_SMTP_CA_FILE"))
        } catch {
            throw .invalidArgument("RAVE_IDENTITY_SMTP_URL / RAVE_IDENTITY_SMTP_FROM: \(error.message)")
        }
    }

    /// Parses "social=127.0.0.1:7502,leaderboards=127.0.0.1:7503"; names must be unique.
    static func participants(_ text: String) throws(IdentityError) -> [MergeParticipant] {
        var participants: [MergeParticipant] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1).map(String.init)
            let address = parts.count == 2 ? parts[1].split(separator: ":").map(String.init) : []
            guard parts.count == 2, !parts[0].isEmpty, address.count == 2, !address[0].isEmpty,
                let port = Int(address[1]), (1...65_535).contains(port)
            else {
                throw .invalidArgument(
                    "RAVE_IDENTITY_MERGE_PARTICIPANTS entries must look like name=host:port, got \"\(trimmed)\"")
            }
            guard !participants.contains(where: { $0.name == parts[0] }) else {
                throw .invalidArgument("RAVE_IDENTITY_MERGE_PARTICIPANTS names \(parts[0]) twice")
            }
            participants.append(MergeParticipant(name: parts[0], host: address[0], port: port))
        }
        return participants
    }
}

extension OIDCProviderConfiguration {
    /// Reads every provider configured in `environment`.
    ///
    /// Per provider P (GOOGLE, APPLE, FACEBOOK): `RAVE_OIDC_P_JWKS` (path of the JWKS file; the provider is enabled
    /// when set), `RAVE_OIDC_P_AUDIENCE` (comma-separated client ids, required when enabled) and optionally
    /// `RAVE_OIDC_P_ISSUER` (comma-separated, replacing the well-known issuers). Errors name the variable.
    public static func fromEnvironment(
        _ environment: [String: String]
    ) throws(CryptoError) -> [OIDCProviderConfiguration] {
        var configurations: [OIDCProviderConfiguration] = []
        for provider in OIDCProvider.allCases {
            let prefix = "RAVE_OIDC_\(provider.environmentName)_"
            let jwks = environment[prefix + "JWKS"]?.trimmingWhitespace ?? ""
            let audiences = list(environment[prefix + "AUDIENCE"])
            let issuers = list(environment[prefix + "ISSUER"])
            guard !jwks.isEmpty else {
                if !audiences.isEmpty || !issuers.isEmpty {
                    throw .configuration(
                        "\(prefix)JWKS must name the provider's key file when \(prefix)AUDIENCE or \(prefix)ISSUER "
                            + "is set")
                }
                continue
            }
            guard !audiences.isEmpty else {
                throw .configuration(
                    "\(prefix)AUDIENCE must list the accepted client ids (comma-separated) when \(prefix)JWKS is set")
            }
            configurations.append(
                OIDCProviderConfiguration(
                    provider: provider, audiences: audiences, jwksPath: jwks, issuers: issuers.isEmpty ? nil : issuers))
        }
        return configurations
    }

    private static func list(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { String($0).trimmingWhitespace }.filter { !$0.isEmpty }
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
