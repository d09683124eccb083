import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Identity

/// Account deletion (docs/identity.md, "Deleting an account"): a player schedules it, re-authenticated; a login
/// during the grace period cancels it; when due, identity erases its own data for the user and its merged ids and
/// tells every participant until each acknowledged.
@Suite("Account deletion")
struct AccountDeletionTests {
    typealias Harness = IdentityHarness
    static let password = "correct horse"
    static let grace: TimeInterval = 14 * 24 * 3600

    /// A password account signed up on `device`.
    func account(
        _ harness: Harness, app: IdentityV1.Application, email: String = "leaving@example.com", device: String = "phone"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: device), email: email, password: Self.password,
                birthYear: 1990, country: "DE", username: "leaving_player"),
            context: Harness.anonymous)
    }

    func passwordLogin(
        _ harness: Harness, appID: String, email: String = "leaving@example.com", device: String = "tablet"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.loginWithPassword(
            .init(appId: appID, device: .init(deviceId: device), email: email, password: Self.password),
            context: Harness.anonymous)
    }

    func delete(
        _ harness: Harness, _ login: IdentityV1.LoginResponse, appID: String, password: String = password
    ) async throws -> IdentityV1.DeleteAccountResponse {
        try await harness.player.deleteAccount(
            .init(currentPassword: password), context: Harness.playerContext(login, appID: appID))
    }

    @Test func deletionIsScheduledAfterTheGraceAndEndsEverySession() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let tablet = try await passwordLogin(harness, appID: app.appId)
            let context = Harness.playerContext(phone, appID: app.appId)

            let missing = await statusCode {
                _ = try await harness.player.deleteAccount(.init(), context: context)
            }
            #expect(missing?.code == .invalidArgument)
            #expect(missing?.message == "current_password is required: this account has a password")
            let wrong = await statusCode { _ = try await delete(harness, phone, appID: app.appId, password: "nope") }
            #expect(wrong?.code == .invalidArgument)
            #expect(wrong?.message == "current_password is wrong")

            let response = try await delete(harness, phone, appID: app.appId)
            let deletion = try #require(response.deletion)
            #expect(deletion.status == .scheduled)
            #expect(deletion.requestedBy == .player)
            #expect(deletion.userId == phone.userID)
            #expect(deletion.dueAtUnixMs == clock.now.addingTimeInterval(Self.grace).unixMilliseconds)
            #expect(response.revokedSessions == 2)
            for login in [phone, tablet] {
                let refused = await statusCode {
                    _ = try await harness.player.getCurrentUser(
                        .init(), context: Harness.playerContext(login, appID: app.appId))
                }
                #expect(refused?.code == .unauthenticated)
            }
            // A refresh is not a login: the session stays ended and the deletion scheduled.
            let refresh = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: tablet.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
            }
            #expect(refresh?.code == .unauthenticated)
            // Not due yet.
            clock.advance(by: Self.grace - 60)
            #expect(try await harness.dependencies.deletions.startDue(pool: harness.pool) == 0)
            let listed = try await harness.admin.listAccountDeletions(
                .init(status: .scheduled), context: Harness.adminContext)
            #expect(listed.deletions.map(\.deletionId) == [deletion.deletionId])
        }
    }

    @Test func aLoginDuringTheGraceCancelsTheDeletion() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            _ = try await delete(harness, phone, appID: app.appId)
            clock.advance(by: 3600)

            let login = try await passwordLogin(harness, appID: app.appId)
            #expect(login.deletionCancelled)
            #expect(login.userID == phone.userID)
            let seen = try await harness.player.getAccountDeletion(
                .init(), context: Harness.playerContext(login, appID: app.appId))
            #expect(seen.deletion?.status == .cancelled)
            #expect(seen.deletion?.cancelledBy == .login)
            #expect(seen.deletion?.cancelledAtUnixMs == clock.now.unixMilliseconds)
            let again = try await passwordLogin(harness, appID: app.appId)
            #expect(!again.deletionCancelled)

            clock.advance(by: Self.grace)
            #expect(try await harness.dependencies.deletions.startDue(pool: harness.pool) == 0)
            _ = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(login, appID: app.appId))
        }
    }

    /// A guest re-authenticates with a recent login (no password to give), and a guest login of its device during
    /// the grace period cancels the deletion.
    @Test func aGuestDeletesWithARecentLoginAndItsDeviceCancels() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "guest-device")
            let context = Harness.playerContext(guest, appID: app.appId)
            // A session that logged in more than 5 minutes ago is not enough.
            try await harness.pool.execute(
                PostgresStatement(
                    name: "test_age_session",
                    sql: "UPDATE sessions SET created_at = now() - interval '6 minutes' WHERE id = $1"),
                [try parseRaveID(guest.sessionTokens?.sessionId ?? "")])
            let stale = await statusCode { _ = try await harness.player.deleteAccount(.init(), context: context) }
            #expect(stale?.code == .failedPrecondition)
            #expect(stale?.message.hasPrefix("log in again to delete this account") == true)

            let fresh = try await harness.guestLogin(appID: app.appId, deviceID: "guest-device")
            let scheduled = try await harness.player.deleteAccount(
                .init(), context: Harness.playerContext(fresh, appID: app.appId))
            #expect(scheduled.deletion?.status == .scheduled)

            let back = try await harness.guestLogin(appID: app.appId, deviceID: "guest-device")
            #expect(back.userID == guest.userID)
            #expect(back.deletionCancelled)
            let latest = try await harness.player.getAccountDeletion(
                .init(), context: Harness.playerContext(back, appID: app.appId))
            #expect(latest.deletion?.status == .cancelled)
        }
    }

    @Test func twoFactorAccountsGiveACodeToo() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let login = try await account(harness, app: app)
            let context = Harness.playerContext(login, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: context)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            let confirm = try await harness.player.confirmTwoFactor(
                .init(code: try totp.code(at: Date())), context: context)

            let noCode = await statusCode { _ = try await delete(harness, login, appID: app.appId) }
            #expect(noCode?.message == "two_factor_code is required: this account uses two-factor")
            let wrongCode = await statusCode {
                _ = try await harness.player.deleteAccount(
                    .init(currentPassword: Self.password, twoFactorCode: "00000-00000"), context: context)
            }
            #expect(wrongCode?.code == .invalidArgument)
            let response = try await harness.player.deleteAccount(
                .init(currentPassword: Self.password, twoFactorCode: confirm.backupCodes[0]), context: context)
            #expect(response.deletion?.status == .scheduled)
        }
    }

    /// The erasure of identity's tables: after the deletion of an account with a password, a provider link, two
    /// devices, profile values, two-factor, a mail and a guest merged into it, no identity table mentions the
    /// account's id, the merged guest's id, the emails or the device ids, but the bare `users` rows, the audit log
    /// and the deletion's own record.
    @Test func aDueDeletionErasesEveryIdentityRowOfTheUserAndItsMergedIds() async throws {
        let clock = TestClock()
        try await Harness.withProviders(clock: clock) { harness, providers in
            let app = try await harness.makeApplication(
                settings: .init(displayNameScope: .application, twoFactorAllowed: true, crossAppLogin: true))
            let account = try await account(harness, app: app, email: "erase-me@example.com", device: "erase-phone")
            let context = Harness.playerContext(account, appID: app.appId)
            _ = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: "Leaving Player"), gender: .init(value: "other")), context: context)
            let linked = try await harness.player.connectProvider(
                .init(
                    provider: .google,
                    idToken: try providers.token(
                        .google, subject: "google-subject-erase", email: "erase-google@example.com")),
                context: context)
            #expect(linked.outcome != nil)
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "erase-tablet")
            let merged = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "erase-tablet"), email: "erase-me@example.com",
                    password: Self.password),
                context: Harness.playerContext(guest, appID: app.appId))
            #expect(!merged.mergeId.isEmpty)
            _ = try await harness.player.enableTwoFactor(.init(), context: context)
            // A wrong password leaves throttle counters naming the email.
            _ = await statusCode {
                _ = try await harness.player.loginWithPassword(
                    .init(
                        appId: app.appId, device: .init(deviceId: "erase-phone"), email: "erase-me@example.com",
                        password: "wrong password"),
                    context: Harness.context(caller: nil, metadata: ["rave-client-address": "203.0.113.9"]))
            }

            let scheduled = try await delete(harness, merged, appID: app.appId)
            clock.advance(by: Self.grace)
            #expect(try await harness.dependencies.deletions.startDue(pool: harness.pool) == 1)

            let needles = [
                account.userID, guest.userID, "erase-me@example.com", "erase-google@example.com", "erase-phone",
                "erase-tablet", "leaving_player", "Leaving Player", "google-subject-erase",
            ]
            let findings = try await Leftovers.find(needles, in: harness.pool, allowed: IdentityErasureColumns.kept)
            #expect(findings == [], "\(findings)")
            // The user columns a check across services reads are every user column of the schema.
            let userColumns = try await harness.pool.query(
                PostgresQuery(
                    """
                    SELECT table_name::text || '.' || column_name::text AS name FROM information_schema.columns
                    WHERE table_schema = 'public' AND data_type = 'uuid'
                        AND (column_name LIKE '%user_id' OR column_name = 'merged_into'
                            OR (table_name = 'users' AND column_name = 'id'))
                    """)
            ).map { try $0.decode(String.self, column: "name") }
            #expect(Set(userColumns) == Set(IdentityErasureColumns.userColumns))

            let deletion = try #require(
                try await harness.admin.listAccountDeletions(.init(), context: Harness.adminContext).deletions.first)
            #expect(deletion.deletionId == scheduled.deletion?.deletionId)
            #expect(deletion.status == .completed)
            let users = try await harness.pool.query(
                PostgresQuery(
                    """
                    SELECT count(*) FILTER (WHERE deleted_at IS NOT NULL AND username IS NULL AND email IS NULL
                        AND display_name IS NULL AND merged_into IS NULL) AS bare, count(*) AS rows
                    FROM users WHERE id = ANY($1)
                    """, [[try parseRaveID(account.userID), try parseRaveID(guest.userID)]]))
            #expect(try users.first?.decode(Int64.self, column: "bare") == 2)
            #expect(try users.first?.decode(Int64.self, column: "rows") == 2)

            // The ids answer as no one's.
            let resolved = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [account.userID, guest.userID]), context: Harness.serviceContext)
            #expect(resolved.users.map(\.canonicalId) == ["", ""])
            let found = await statusCode {
                _ = try await harness.admin.getUser(.init(userId: account.userID), context: Harness.adminContext)
            }
            #expect(found?.code == .notFound)
            let someone = try await harness.guestLogin(appID: app.appId, deviceID: "someone-else")
            for id in [account.userID, guest.userID] {
                let byID = await statusCode {
                    _ = try await harness.player.findUser(
                        .init(key: .userId(id)), context: Harness.playerContext(someone, appID: app.appId))
                }
                #expect(byID?.code == .notFound)
            }
            let internalFind = try await harness.internalHandlers.findUsers(
                .init(references: [.init(key: .userId(account.userID))]), context: Harness.serviceContext)
            #expect(internalFind.users.isEmpty)
            let caller = await statusCode { _ = try await harness.player.getCurrentUser(.init(), context: context) }
            #expect(caller?.code == .unauthenticated)
            // The devices play as new guests; the email logs in to nothing.
            let newGuest = try await harness.guestLogin(appID: app.appId, deviceID: "erase-tablet")
            #expect(![account.userID, guest.userID].contains(newGuest.userID))
            let gone = await statusCode {
                _ = try await passwordLogin(harness, appID: app.appId, email: "erase-me@example.com")
            }
            #expect(gone?.code == .unauthenticated)
        }
    }

    @Test func operatorsForceAndCancelDeletionsAndBothAreAudited() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let kept = try await account(harness, app: app, email: "kept@example.com")
            let forced = try await harness.guestLogin(appID: app.appId, deviceID: "forced-device")
            _ = try await delete(harness, kept, appID: app.appId)

            let cancelled = try await harness.admin.cancelAccountDeletion(
                .init(userId: kept.userID, reason: "asked by support"), context: Harness.adminContext)
            #expect(cancelled.deletion?.status == .cancelled)
            #expect(cancelled.deletion?.cancelledBy == .operator)
            let again = await statusCode {
                _ = try await harness.admin.cancelAccountDeletion(
                    .init(userId: kept.userID, reason: "twice"), context: Harness.adminContext)
            }
            #expect(again?.code == .notFound)

            let force = try await harness.admin.forceAccountDeletion(
                .init(userId: forced.userID, reason: "legal request"), context: Harness.adminContext)
            // No participants are configured: identity's erasure completes it at once.
            #expect(force.deletion?.status == .completed)
            #expect(force.deletion?.requestedBy == .operator)
            let late = await statusCode {
                _ = try await harness.admin.cancelAccountDeletion(
                    .init(userId: forced.userID, reason: "too late"), context: Harness.adminContext)
            }
            #expect(late?.code == .failedPrecondition)
            let repeated = try await harness.admin.forceAccountDeletion(
                .init(userId: forced.userID, reason: "again"), context: Harness.adminContext)
            #expect(repeated.deletion?.deletionId == force.deletion?.deletionId)

            let audit = try await harness.admin.listAuditEvents(.init(), context: Harness.adminContext).events
            #expect(audit.map(\.action) == [.forceAccountDeletion, .cancelAccountDeletion])
            #expect(audit.map(\.targetUserId) == [forced.userID, kept.userID])
            #expect(audit.last?.afterJson.contains("\"status\": \"cancelled\"") == true)
            let completed = try await harness.admin.listAccountDeletions(
                .init(status: .completed), context: Harness.adminContext)
            #expect(completed.deletions.map(\.userId) == [forced.userID])
            let paged = try await harness.admin.listAccountDeletions(.init(pageSize: 1), context: Harness.adminContext)
            #expect(paged.deletions.map(\.userId) == [forced.userID])
            let rest = try await harness.admin.listAccountDeletions(
                .init(pageSize: 1, pageToken: paged.nextPageToken), context: Harness.adminContext)
            #expect(rest.deletions.map(\.userId) == [kept.userID])
            #expect(rest.nextPageToken == "")
        }
    }

    /// An operator forcing a scheduled deletion starts that one now, with no grace left; a merged-away id names the
    /// account it was merged into.
    @Test func forcingAScheduledDeletionStartsItNow() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            _ = try await account(harness, app: app)
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "merged-device")
            let login = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "merged-device"), email: "leaving@example.com",
                    password: Self.password),
                context: Harness.playerContext(guest, appID: app.appId))
            #expect(!login.mergeId.isEmpty)
            let scheduled = try #require(try await delete(harness, login, appID: app.appId).deletion)
            clock.advance(by: 60)

            let forced = try #require(
                try await harness.admin.forceAccountDeletion(
                    .init(userId: guest.userID, reason: "legal request"), context: Harness.adminContext
                ).deletion)
            #expect(forced.deletionId == scheduled.deletionId)
            #expect(forced.userId == login.userID)
            #expect(forced.requestedBy == .player)
            #expect(forced.status == .completed)
            #expect(forced.startedAtUnixMs == clock.now.unixMilliseconds)
            #expect(forced.dueAtUnixMs == clock.now.unixMilliseconds)
            let audit = try #require(
                try await harness.admin.listAuditEvents(.init(), context: Harness.adminContext).events.first)
            #expect(audit.targetUserId == login.userID)
            #expect(audit.beforeJson.contains("\"status\": \"scheduled\""))
            #expect(audit.afterJson.contains("\"requested_user_id\": \"\(guest.userID)\""))
        }
    }

    /// Logins that arrive while the deletion is being started wait for it, then never reach the deleted account: a
    /// password login is refused, and a guest login of the account's device plays as a new user.
    @Test func loginsRacingTheStartOfTheDeletionDoNotReachTheAccount() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let scheduled = try #require(try await delete(harness, phone, appID: app.appId).deletion)
            clock.advance(by: Self.grace)
            let deletionID = try parseRaveID(scheduled.deletionId)
            let (password, guest) = try await harness.pool.transaction { transaction in
                #expect(try await harness.dependencies.deletions.start(deletionID, in: transaction))
                // Both logins read the account before the erasure commits, and wait for its locks.
                let password = Task { await statusCode { _ = try await passwordLogin(harness, appID: app.appId) } }
                let guest = Task { try await harness.guestLogin(appID: app.appId, deviceID: "phone") }
                try await eventually {
                    let waiting = try await harness.pool.query(
                        PostgresQuery("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))
                    return try waiting.first?.decode(Int64.self, column: "n") ?? 0 >= 2
                }
                return (password, guest)
            }
            let refused = await password.value
            #expect(refused?.code == .unauthenticated || refused?.code == .aborted, "\(String(describing: refused))")
            let newGuest = try await guest.value
            #expect(newGuest.userID != phone.userID)
            #expect(newGuest.created)
            let sessions = try await harness.pool.query(
                PostgresQuery("SELECT count(*) AS n FROM sessions WHERE user_id = $1", [try parseRaveID(phone.userID)]))
            #expect(try sessions.first?.decode(Int64.self, column: "n") == 0)
        }
    }

    @Test func aUserBeingDeletedTakesNoPartInMerges() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let leaving = try await account(harness, app: app)
            let other = try await harness.guestLogin(appID: app.appId, deviceID: "other-device")
            _ = try await delete(harness, leaving, appID: app.appId)
            for (source, target) in [(other.userID, leaving.userID), (leaving.userID, other.userID)] {
                let refused = await statusCode {
                    _ = try await harness.pool.transaction { transaction in
                        try await harness.dependencies.mergeSaga.merge(
                            source: try parseRaveID(source), into: try parseRaveID(target), appID: nil,
                            in: transaction)
                    }
                }
                #expect(refused?.code == .failedPrecondition)
                #expect(refused?.message.contains("is being deleted") == true)
            }
        }
    }

    @Test func theGraceSettingTakesAUnit() throws {
        #expect(IdentityConfiguration.grace("14d") == TimeInterval(14 * 86_400))
        #expect(IdentityConfiguration.grace("36h") == TimeInterval(36 * 3600))
        #expect(IdentityConfiguration.grace("0s") == 0)
        #expect(IdentityConfiguration.grace("366d") == nil)
        #expect(IdentityConfiguration.grace("14") == nil)
        let keys = try SecretKeyFile.ring()
        let configuration = try IdentityConfiguration(
            environment: ["RAVE_IDENTITY_DELETION_GRACE": "2d"], secretKeys: keys)
        #expect(configuration.deletionGrace == 2 * 86_400)
        #expect(IdentityConfiguration(secretKeys: keys).deletionGrace == 14 * 86_400)
        #expect(throws: IdentityError.self) {
            _ = try IdentityConfiguration(environment: ["RAVE_IDENTITY_DELETION_GRACE": "two weeks"], secretKeys: keys)
        }
    }

    /// The saga over real mTLS: a participant that fails its first two calls is retried until it erases, and the
    /// deletion completes only then; afterwards identity holds no link between the user and the tombstone.
    @Test func erasureIsDeliveredToAFailingParticipantUntilItAcknowledges() async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-erase-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "wallet"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let participant = FlakyEraser(failures: 2)
        let server = RPCServer(
            services: [participant], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/wallet.pem",
                    privateKeyPath: "\(certificates)/wallet-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: Harness.group, logger: Logger(label: "participant", level: .critical))
        try server.start()
        let wallet = IdentityConfiguration.MergeParticipant(name: "wallet", host: "127.0.0.1", port: server.localPort)

        try await Harness.with(configure: { $0.mergeParticipants = [wallet] }) { harness in
            let app = try await harness.makeApplication()
            let leaving = try await account(harness, app: app)
            let forced = try await harness.admin.forceAccountDeletion(
                .init(userId: leaving.userID, reason: "test"), context: Harness.adminContext)
            #expect(forced.deletion?.status == .started)
            #expect(forced.deletion?.pendingParticipants == ["wallet"])

            let delivery = try harness.participantDelivery(to: [wallet], certificates: certificates)
            let running = Task { try await delivery.run() }
            var status = forced.deletion
            let deadline = ContinuousClock.now + .seconds(20)
            while status?.status != .completed, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                status = try await harness.admin.listAccountDeletions(
                    .init(userId: leaving.userID), context: Harness.adminContext
                ).deletions.first
            }
            await delivery.shutdown()
            try await running.value

            #expect(status?.status == .completed)
            #expect(status?.acknowledgedBy == ["wallet"])
            #expect(participant.calls == 3)
            #expect(participant.callersWereServices)
            let request = try #require(participant.applied.first)
            #expect(request.erasureId == forced.deletion?.deletionId)
            #expect(request.userId == leaving.userID)
            #expect(request.tombstoneId.count == 32 && request.tombstoneId != leaving.userID)
            let attempts = try await harness.pool.query(
                PostgresQuery("SELECT attempts, last_error FROM account_deletion_participants"))
            #expect(try attempts.first?.decode(Int32.self, column: "attempts") == 3)
            // Nothing in identity names the tombstone any more.
            #expect(try await Leftovers.find([request.tombstoneId], in: harness.pool) == [])
        }
        await server.shutdown()
    }
}

/// An erasure participant that fails its first calls, then records each erasure once.
final class FlakyEraser: ErasureV1.ErasureParticipantHandler {
    private struct State {
        var failuresLeft: Int
        var calls = 0
        var applied: [ErasureV1.EraseUserRequest] = []
        var callersWereServices = true
    }

    private let state: Mutex<State>

    init(failures: Int) {
        state = Mutex(State(failuresLeft: failures))
    }

    var calls: Int { state.withLock { $0.calls } }
    var applied: [ErasureV1.EraseUserRequest] { state.withLock { $0.applied } }
    var callersWereServices: Bool { state.withLock { $0.callersWereServices } }

    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        try state.withLock { state throws(RPCError) in
            state.calls += 1
            state.callersWereServices = state.callersWereServices && context.peer.role == .service("identity")
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw RPCError.unavailable("the participant is still starting")
            }
            let already = state.applied.contains { $0.erasureId == request.erasureId }
            if !already { state.applied.append(request) }
            return ErasureV1.EraseUserResponse(alreadyApplied: already)
        }
    }
}
