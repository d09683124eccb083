import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry

/// What every identity handler shares: the database, the token signer and the settings.
///
/// The RPC services (`PlayerHandlers`, `AdminHandlers`, `InternalHandlers`) are thin views over one of these.
package final class IdentityDependencies: Sendable {
    let pool: PostgresPool
    let configuration: IdentityConfiguration
    let signer: AccessTokenSigner
    /// Hashes and checks passwords on threads of their own, a bounded number at once.
    let passwordHashers: PasswordHasherPool
    /// Counts failed password and two-factor attempts per address and account.
    let loginThrottle: LoginThrottle
    /// Verifies provider ID tokens against each configured provider's keys.
    let providerVerifier: OIDCVerifier
    /// Starts merges and enqueues their participant events.
    let mergeSaga: MergeSaga
    /// Schedules, cancels and starts account deletions.
    let deletions: AccountDeletions
    /// Applications as recently read (settings change rarely; logins need them on every call).
    let applications: ApplicationCache
    /// Social's blocks, when a social service is configured; FindUser hides blockers from the players they blocked.
    let blocks: (any BlockRegistry)?
    /// Bounds FindUser lookups by email or username per caller and client address.
    let lookups: LookupLimiter
    /// Refreshes of the common case, rotated many in one statement: the refreshes that arrive while one runs wait
    /// for the next (`SessionStore.rotateMany`), so PostgreSQL pays one statement and one commit per group.
    let rotations: WorkGrouper<String, RotatedSession?>
    /// Seals and opens signing keys and TOTP secrets (`SecretSealing`).
    var secretKeys: SecretKeyRing { configuration.secretKeys }
    /// The clock the time rules read.
    ///
    /// Whether a ban still applies, the login throttle's windows, how recent a password change is: injected, so
    /// tests move it instead of waiting.
    let clock: @Sendable () -> Date
    /// Scopes a player access token carries: `player`, plus `guest` or `authenticated` by account state, so
    /// services can apply the seed's rules (guests cannot submit scores or place backed bets) without a lookup.
    static func playerScopes(for state: IdentityV1.AccountState) -> [String] {
        switch state {
        case .anonymous: [Caller.playerScope, Caller.guestScope]
        case .authenticated: [Caller.playerScope, Caller.authenticatedScope]
        default: [Caller.playerScope]
        }
    }

    /// The most refreshes one rotation statement takes.
    static let maximumRotationsPerStatement = 1024
    /// Rotation statements that may run at once (a second one overlaps the first's commit).
    ///
    /// The statement locks its sessions in id order, so two never deadlock.
    static let concurrentRotationStatements = 2
    /// Refreshes that must be waiting before a second statement starts beside a running one; fewer wait for the
    /// next group, since each statement pays a commit.
    static let minimumSecondRotation = 8

    private init(
        pool: PostgresPool, configuration: IdentityConfiguration, signer: AccessTokenSigner,
        passwordHashers: PasswordHasherPool, blocks: (any BlockRegistry)?, clock: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.clock = clock
        self.passwordHashers = passwordHashers
        loginThrottle = LoginThrottle(pool: pool, policy: configuration.loginThrottle, clock: clock)
        applications = ApplicationCache(pool: pool)
        self.blocks = blocks
        lookups = LookupLimiter(
            perUserPerMinute: configuration.findUserLookupsPerMinute,
            perAddressPerMinute: 5 * configuration.findUserLookupsPerMinute)
        self.configuration = configuration
        self.signer = signer
        let lifetime = configuration.sessionLifetime
        rotations = WorkGrouper(
            maximumGroup: Self.maximumRotationsPerStatement,
            maximumConcurrentGroups: Self.concurrentRotationStatements,
            minimumConcurrentGroup: Self.minimumSecondRotation
        ) { tokens in
            try await SessionStore(database: pool).rotate(refreshTokens: tokens, lifetime: lifetime)
        }
        providerVerifier = OIDCVerifier(configurations: configuration.providers)
        mergeSaga = MergeSaga(participants: configuration.mergeParticipants.map(\.name), clock: clock)
        deletions = AccountDeletions(
            participants: configuration.mergeParticipants.map(\.name), grace: configuration.deletionGrace, clock: clock)
    }

    /// Starts the service on a migrated schema.
    ///
    /// Seals secrets left in plaintext by releases before migration 0004, loads (or creates) the signing key and
    /// starts the password hashing threads. `clock` decides bans, the login throttle and password-change retries.
    static func start(
        pool: PostgresPool, configuration: IdentityConfiguration, blocks: (any BlockRegistry)? = nil,
        logger: Logger? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> IdentityDependencies {
        if let sealed = try await SecretSealing.sealPlaintextRows(pool: pool, secrets: configuration.secretKeys) {
            logger?.notice(
                "sealed the secrets stored in plaintext; the plaintext signing keys are retired",
                [
                    ("signing_keys", String(sealed.signingKeys)), ("totp_secrets", String(sealed.totpSecrets)),
                    ("secret_key_id", configuration.secretKeys.primaryKeyID),
                ])
        }
        let signer = try await SigningKeyStore(database: pool).activeSigner(secrets: configuration.secretKeys)
        let passwordHashers = try PasswordHasherPool(
            hasher: PasswordHasher(parameters: configuration.passwordParameters),
            threads: configuration.passwordHashers,
            queueLimit: configuration.passwordQueue)
        return IdentityDependencies(
            pool: pool, configuration: configuration, signer: signer, passwordHashers: passwordHashers, blocks: blocks,
            clock: clock)
    }

    /// The three RPC services, ready for the server.
    package var rpcServices: [any RPCService] {
        [PlayerHandlers(dependencies: self), AdminHandlers(dependencies: self), InternalHandlers(dependencies: self)]
    }

    // MARK: - Sessions

    /// Signs an access token whose scopes reflect `accountState`, the user's state as just read.
    ///
    /// Callers read the state with the rows they need anyway, so issuing costs no query of its own.
    func tokens(
        userID: RaveID, appID: RaveID, sessionID: RaveID, refreshToken: String, accountState: IdentityV1.AccountState
    ) throws -> IdentityV1.SessionTokens {
        let session = sessionID.hex
        let issued = try signer.issue(
            subject: userID.hex, applicationID: appID.hex, sessionID: session,
            scopes: Self.playerScopes(for: accountState), lifetime: configuration.accessTokenLifetime)
        return IdentityV1.SessionTokens(
            accessToken: issued.token, accessTokenExpiresAtUnixMs: issued.claims.expiresAt * 1000,
            refreshToken: refreshToken, sessionId: session)
    }

    /// Seconds after a session ends during which one of its access tokens may still be accepted somewhere.
    ///
    /// The lifetime of the last token it could have been issued, plus the verifiers' clock skew, twice (identity's
    /// and the gateway's clocks may each be off). The revocation feed keeps an ended session that long.
    var revocationHorizon: Int64 { configuration.accessTokenLifetime + 2 * AccessTokenVerifier.defaultClockSkew }

    // MARK: - Bans

    /// PERMISSION_DENIED with the ban when one applies to `userID` now: the check before a login issues anything.
    func refuseIfBanned(_ userID: RaveID, database: (any PostgresQueryable)? = nil) async throws {
        if let ban = try await BanStore(database: database ?? pool).ban(of: userID), ban.applies(at: clock()) {
            throw Bans.refusal(ban)
        }
    }

    /// The check after a login committed its session (`Bans`), with the user's stored `ban` as read after the
    /// commit: when it applies now (it committed while the login ran), the session ends before its tokens leave and
    /// the login is refused.
    func endSessionIfBanned(userID: RaveID, sessionID: RaveID, ban: BanRecord?) async throws {
        guard let ban, ban.applies(at: clock()) else { return }
        try await SessionStore(database: pool).revoke(sessionID: sessionID, userID: userID, reason: "ban")
        throw Bans.refusal(ban)
    }

    /// `response` of a committed login, once the check after the commit found no ban for the session it opened (a
    /// two-factor challenge opened none).
    func checkedAfterCommit(_ response: IdentityV1.LoginResponse) async throws -> IdentityV1.LoginResponse {
        guard case .tokens(let tokens) = response.outcome, let sessionID = RaveID(tokens.sessionId),
            let userID = RaveID(response.user?.profile?.userId ?? "")
        else { return response }
        try await endSessionIfBanned(
            userID: userID, sessionID: sessionID, ban: try await BanStore(database: pool).ban(of: userID))
        return response
    }

    // MARK: - Callers

    /// The calling player's user and app ids, resolved through merges so an old session acts as the target.
    ///
    /// Refuses a session that has ended (logout, revocation, …) in the same query: a call that reaches identity
    /// without the gateway's revocation feed (or before the feed caught up) is still refused. Refuses a token
    /// restricted to the wallet's unbacked play (`wallet:unbacked`): no identity method is for it.
    func player(_ context: RequestContext) async throws -> (userID: RaveID, appID: RaveID) {
        let caller = try context.requireUser()
        guard !caller.scopes.contains(PlayerHandlers.unbackedOnlyScope) else {
            throw IdentityError.permissionDenied(
                "an unbacked token (scope \(PlayerHandlers.unbackedOnlyScope)) is for the wallet's unbacked bets only")
        }
        let userID = try Validation.raveID(caller.userID, field: "caller user id")
        let appID = try Validation.raveID(caller.appID, field: "caller app id")
        guard let sessionID = RaveID(caller.sessionID) else {
            throw IdentityError.unauthenticated("the access token names no session; log in again")
        }
        guard let found = try await SessionStore(database: pool).caller(userID: userID, sessionID: sessionID) else {
            throw IdentityError.unauthenticated("the signed-in user \(userID.hex) no longer exists")
        }
        guard !found.ended else { throw IdentityError.unauthenticated("the session has ended; log in again") }
        return (found.canonical, appID)
    }
}
