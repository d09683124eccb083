import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Bans (docs/identity.md, "Bans"): a ban ends every session at once (on the revocation feed), refuses every kind of
/// login and refresh with a message a game can show and the ban in the status details, lapses by itself, follows
/// merges, and is written to the audit log in its own transaction.
@Suite("Bans")
struct BanTests {
    typealias Harness = IdentityHarness
    static let password = "correct horse"

    /// The context of an operator using the admin certificate named `name`, as the gateway passes it.
    static func operatorContext(_ name: String = "ops-alice") -> RequestContext {
        Harness.context(
            caller: Caller(userID: "", appID: "", sessionID: "", scopes: ["admin"]),
            metadata: [MetadataKey.callerAdmin: name])
    }

    /// The `IdentityError` `body` throws; nil when it succeeds.
    static func refusal(_ body: () async throws -> Void) async -> IdentityError? {
        do {
            try await body()
            return nil
        } catch let error as IdentityError {
            return error
        } catch {
            Issue.record("expected an IdentityError, got \(error)")
            return nil
        }
    }

    /// Checks that `error` is the ban refusal for `reason` (and `until`), with the ban in its details.
    static func expectBanRefusal(
        _ error: IdentityError?, reason: String, until: Int64 = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(error?.code == .permissionDenied, sourceLocation: sourceLocation)
        let end = until == 0 ? "" : " until \(Bans.timestamp(Date(unixMilliseconds: until)))"
        #expect(error?.message == "this account is banned\(end): \(reason)", sourceLocation: sourceLocation)
        let info = try IdentityV1.BanInfo(protobufBytes: error?.details ?? [])
        #expect(info == IdentityV1.BanInfo(reason: reason, untilUnixMs: until), sourceLocation: sourceLocation)
    }

    func signUp(
        _ harness: Harness, appID: String, email: String, device: String = "phone"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.signUp(
            .init(
                appId: appID, device: .init(deviceId: device), email: email, password: Self.password,
                birthYear: 1990, country: "DE"),
            context: Harness.anonymous)
    }

    func passwordLogin(
        _ harness: Harness, appID: String, email: String, device: String = "tablet", password: String = password
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.loginWithPassword(
            .init(appId: appID, device: .init(deviceId: device), email: email, password: password),
            context: Harness.context(caller: nil, metadata: ["rave-client-address": "192.0.2.10"]))
    }

    func ban(
        _ harness: Harness, _ userID: String, reason: String = "cheating", until: Int64 = 0
    ) async throws -> IdentityV1.BanUserResponse {
        try await harness.admin.banUser(
            .init(userId: userID, reason: reason, untilUnixMs: until), context: Self.operatorContext())
    }

    func sessionCount(_ harness: Harness, userID: String) async throws -> Int64 {
        let rows = try await harness.pool.query(
            PostgresQuery("SELECT count(*) AS n FROM sessions WHERE user_id = $1", [RaveID(wire: userID)]))
        return try rows[0].decode(Int64.self, column: "n")
    }

    @Test func aBanEndsEverySessionAndRefusesGuestPasswordAndRefreshLogins() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let phone = try await signUp(harness, appID: app.appId, email: "banned@example.com")
            let tablet = try await passwordLogin(harness, appID: app.appId, email: "banned@example.com")
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "phone")
            #expect(guest.userID == phone.userID)
            let bystander = try await signUp(harness, appID: app.appId, email: "fair@example.com", device: "other")
            let cursor = try await harness.internalHandlers.listRevocations(
                .init(), context: Harness.serviceContext
            ).cursor

            let banned = try await ban(harness, phone.userID)
            #expect(banned.userId == phone.userID)
            #expect(banned.revokedSessions == 3)
            #expect(banned.ban == IdentityV1.BanInfo(reason: "cheating", untilUnixMs: 0))

            // Every session is on the revocation feed the gateway polls, and identity itself refuses them.
            let feed = try await harness.internalHandlers.listRevocations(
                .init(afterCursor: cursor), context: Harness.serviceContext)
            #expect(
                Set(feed.revocations.map(\.sessionId))
                    == Set([phone, tablet, guest].compactMap { $0.sessionTokens?.sessionId }))
            let ended = await statusCode {
                _ = try await harness.player.getCurrentUser(
                    .init(), context: Harness.playerContext(tablet, appID: app.appId))
            }
            #expect(ended?.code == .unauthenticated)

            // Every way back in is refused with the ban; none opens a session.
            let sessionsBefore = try await sessionCount(harness, userID: phone.userID)
            try Self.expectBanRefusal(
                await Self.refusal { _ = try await harness.guestLogin(appID: app.appId, deviceID: "phone") },
                reason: "cheating")
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await passwordLogin(harness, appID: app.appId, email: "banned@example.com")
                }, reason: "cheating")
            for login in [phone, tablet, guest] {
                try Self.expectBanRefusal(
                    await Self.refusal {
                        _ = try await harness.player.refreshSession(
                            .init(refreshToken: login.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
                    }, reason: "cheating")
            }
            #expect(try await sessionCount(harness, userID: phone.userID) == sessionsBefore)
            // Someone guessing the password learns nothing about the ban.
            let guess = await Self.refusal {
                _ = try await passwordLogin(
                    harness, appID: app.appId, email: "banned@example.com", password: "wrong guess")
            }
            #expect(guess?.code == .unauthenticated)
            #expect(guess?.message == "the email or password is wrong")
            // Other players are untouched.
            _ = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(bystander, appID: app.appId))
            _ = try await passwordLogin(harness, appID: app.appId, email: "fair@example.com")
        }
    }

    @Test func providerLoginsAndTwoFactorCompletionsAreRefusedWhileBanned() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let google = try providers.token(.google, subject: "banned-google")
            let linked = try await harness.providerLogin(
                appID: app.appId, deviceID: "g", provider: .google, token: google)
            _ = try await ban(harness, linked.userID, reason: "botting")
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await harness.providerLogin(
                        appID: app.appId, deviceID: "g2", provider: .google, token: google)
                }, reason: "botting")

            // A two-factor account: a challenge opened before the ban cannot be completed after it.
            let account = try await signUp(harness, appID: app.appId, email: "tf@example.com")
            let context = Harness.playerContext(account, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: context)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            _ = try await harness.player.confirmTwoFactor(.init(code: try totp.code(at: Date())), context: context)
            let login = try await passwordLogin(harness, appID: app.appId, email: "tf@example.com")
            guard case .twoFactorChallenge(let challenge) = login.outcome else {
                Issue.record("expected a two-factor challenge")
                return
            }
            _ = try await ban(harness, account.userID, reason: "chargebacks")
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await harness.player.completeTwoFactorLogin(
                        .init(
                            challengeId: challenge.challengeId, code: try totp.code(at: Date().addingTimeInterval(30))),
                        context: Harness.anonymous)
                }, reason: "chargebacks")
            // And a new password login gets no challenge.
            try Self.expectBanRefusal(
                await Self.refusal { _ = try await passwordLogin(harness, appID: app.appId, email: "tf@example.com") },
                reason: "chargebacks")
        }
    }

    @Test func aBanWithAnEndLapsesByItselfAndSaysWhenItEnds() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, appID: app.appId, email: "timeout@example.com")
            let until = clock.now.addingTimeInterval(3600).unixMilliseconds
            let banned = try await ban(harness, account.userID, reason: "one hour out", until: until)
            #expect(banned.ban?.untilUnixMs == until)
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await passwordLogin(harness, appID: app.appId, email: "timeout@example.com")
                },
                reason: "one hour out", until: until)
            let seen = try await harness.admin.getUser(.init(userId: account.userID), context: Self.operatorContext())
            #expect(seen.ban == IdentityV1.BanInfo(reason: "one hour out", untilUnixMs: until))
            #expect(seen.user?.profile?.userId == account.userID)

            clock.advance(by: 3601)
            _ = try await passwordLogin(harness, appID: app.appId, email: "timeout@example.com")
            _ = try await harness.guestLogin(appID: app.appId, deviceID: "phone")
            let after = try await harness.admin.getUser(.init(userId: account.userID), context: Self.operatorContext())
            #expect(after.ban == nil)
            // Lifting a ban that already ended changes nothing, and says so.
            let lifted = try await harness.admin.unbanUser(
                .init(userId: account.userID, reason: "tidy up"), context: Self.operatorContext())
            #expect(lifted.wasBanned == false)
        }
    }

    @Test func unbanningLetsThePlayerBackInAtOnce() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, appID: app.appId, email: "appeal@example.com")
            _ = try await ban(harness, account.userID)
            let lifted = try await harness.admin.unbanUser(
                .init(userId: account.userID, reason: "appeal accepted"), context: Self.operatorContext())
            #expect(lifted == IdentityV1.UnbanUserResponse(userId: account.userID, wasBanned: true))
            _ = try await passwordLogin(harness, appID: app.appId, email: "appeal@example.com")
            let seen = try await harness.admin.getUser(.init(userId: account.userID), context: Self.operatorContext())
            #expect(seen.ban == nil)
        }
    }

    @Test func aBanOfAMergedAwayIdBansTheAccountItWasMergedInto() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, appID: app.appId, email: "target@example.com")
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "tablet")
            // The guest logs in to the account: it is merged into it.
            let merged = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "tablet"), email: "target@example.com",
                    password: Self.password),
                context: Harness.playerContext(guest, appID: app.appId))
            #expect(!merged.mergeId.isEmpty)

            let banned = try await ban(harness, guest.userID, reason: "alt account")
            #expect(banned.userId == account.userID)
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await passwordLogin(harness, appID: app.appId, email: "target@example.com")
                },
                reason: "alt account")
            let seen = try await harness.admin.getUser(.init(userId: guest.userID), context: Self.operatorContext())
            #expect(seen.user?.profile?.userId == account.userID)
            #expect(seen.ban?.reason == "alt account")
            let events = try await harness.admin.listAuditEvents(
                .init(targetUserId: account.userID), context: Self.operatorContext())
            #expect(events.events.first?.afterJson.contains("\"requested_user_id\": \"\(guest.userID)\"") == true)
        }
    }

    @Test func noMergeTakesInOrMovesABannedAccount() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            let google = try providers.token(.google, subject: "owner-google")
            let owner = try await harness.providerLogin(
                appID: app.appId, deviceID: "owner", provider: .google, token: google)
            _ = try await ban(harness, owner.userID, reason: "fraud")
            // A guest connecting the banned account's provider would be merged into it (automatic policy).
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "guest")
            try Self.expectBanRefusal(
                await Self.refusal {
                    _ = try await harness.player.connectProvider(
                        .init(provider: .google, idToken: google),
                        context: Harness.playerContext(guest, appID: app.appId))
                }, reason: "fraud")
            let resolved = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [guest.userID]), context: Harness.serviceContext)
            #expect(resolved.users.first?.canonicalId == guest.userID)
        }
    }

    /// A ban that commits while a login is under way, after the login looked for one: the login's own look after
    /// its commit ends the session it opened and refuses it (the ban's sweep after its commit covers the other
    /// order).
    @Test func aBanThatCommittedDuringALoginEndsTheSessionTheLoginOpened() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await signUp(harness, appID: app.appId, email: "race@example.com")
            let userID = try #require(RaveID(wire: login.userID))
            // The ban as its transaction writes it, without its revocations: what the login could not have seen.
            try await BanStore(database: harness.pool).ban(
                userID, BanRecord(reason: "caught mid-login", until: nil), at: Date())
            try Self.expectBanRefusal(
                await Self.refusal { _ = try await harness.dependencies.checkedAfterCommit(login) },
                reason: "caught mid-login")
            let feed = try await harness.internalHandlers.listRevocations(.init(), context: Harness.serviceContext)
            #expect(feed.revocations.map(\.sessionId).contains(login.sessionTokens?.sessionId ?? "-"))
        }
    }

    @Test func banAndUnbanAreWrittenToTheAuditLogWithWhoWhatAndWhy() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let first = try await signUp(harness, appID: app.appId, email: "one@example.com", device: "a")
            let second = try await signUp(harness, appID: app.appId, email: "two@example.com", device: "b")
            let start = clock.now.unixMilliseconds
            _ = try await ban(harness, first.userID, reason: "spam \"links\"")
            clock.advance(by: 60)
            _ = try await harness.admin.banUser(
                .init(userId: second.userID, reason: "abuse", untilUnixMs: clock.now.unixMilliseconds + 86_400_000),
                context: Self.operatorContext("ops-bob"))
            clock.advance(by: 60)
            _ = try await harness.admin.unbanUser(
                .init(userId: first.userID, reason: "appeal"), context: Self.operatorContext("ops-carol"))
            // A refused ban writes nothing.
            _ = await statusCode { _ = try await ban(harness, first.userID, reason: "") }

            let all = try await harness.admin.listAuditEvents(.init(), context: Self.operatorContext())
            #expect(all.events.map(\.action) == [.unbanUser, .banUser, .banUser])
            #expect(all.events.map(\.actor) == ["ops-carol", "ops-bob", "ops-alice"])
            #expect(all.events.allSatisfy { $0.actorKind == .adminCertificate })
            #expect(all.events.map(\.targetUserId) == [first.userID, second.userID, first.userID])
            #expect(all.nextPageToken.isEmpty)
            let firstBan = try #require(all.events.last)
            #expect(firstBan.reason == "spam \"links\"")
            #expect(firstBan.occurredAtUnixMs == start)
            #expect(firstBan.beforeJson == "{\"banned\": false}")
            #expect(
                firstBan.afterJson == "{\"banned\": true, \"reason\": \"spam \\\"links\\\"\", \"until_unix_ms\": 0}")
            let unban = try #require(all.events.first)
            #expect(unban.beforeJson == firstBan.afterJson)
            #expect(unban.afterJson == "{\"banned\": false}")

            // Filters: by user, by action, by time; pages follow each other without gaps.
            let ofFirst = try await harness.admin.listAuditEvents(
                .init(targetUserId: first.userID), context: Self.operatorContext())
            #expect(ofFirst.events.map(\.action) == [.unbanUser, .banUser])
            let bans = try await harness.admin.listAuditEvents(.init(action: .banUser), context: Self.operatorContext())
            #expect(bans.events.map(\.targetUserId) == [second.userID, first.userID])
            let middle = try await harness.admin.listAuditEvents(
                .init(sinceUnixMs: start + 1, beforeUnixMs: start + 120_000), context: Self.operatorContext())
            #expect(middle.events.map(\.actor) == ["ops-bob"])
            var seen: [String] = []
            var token = ""
            repeat {
                let page = try await harness.admin.listAuditEvents(
                    .init(pageSize: 2, pageToken: token), context: Self.operatorContext())
                #expect(page.events.count <= 2)
                seen += page.events.map(\.eventId)
                token = page.nextPageToken
            } while !token.isEmpty
            #expect(seen == all.events.map(\.eventId))
        }
    }

    /// The ban's reason is what the player is shown; why support banned (`rave-reason`, HTTP `X-Rave-Reason`) may be
    /// for the studio's eyes only, and is what the audit log records when given.
    @Test func theAuditLogRecordsTheOperatorsReasonAndThePlayerSeesTheBanMessage() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let player = try await signUp(harness, appID: app.appId, email: "cheat@example.com", device: "a")
            var context = Self.operatorContext("ops-dana")
            context.metadata[MetadataKey.reason] = "chargeback fraud, ticket 4711"
            let banned = try await harness.admin.banUser(
                .init(userId: player.userID, reason: "Your account was suspended for payment abuse."),
                context: context)
            #expect(banned.ban?.reason == "Your account was suspended for payment abuse.")
            let entry = try #require(
                try await harness.admin.listAuditEvents(.init(action: .banUser), context: Self.operatorContext())
                    .events.first)
            #expect(entry.reason == "chargeback fraud, ticket 4711")
            #expect(entry.afterJson.contains("Your account was suspended for payment abuse."))
            // A reason that breaks the reason rules is refused, and nothing is banned.
            context.metadata[MetadataKey.reason] = String(repeating: "x", count: 501)
            let refused = await Self.refusal {
                _ = try await harness.admin.unbanUser(.init(userId: player.userID, reason: "appeal"), context: context)
            }
            #expect(refused?.code == .invalidArgument)
        }
    }

    @Test func theDatabaseRefusesToChangeOrRemoveAuditEvents() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, appID: app.appId, email: "logged@example.com")
            _ = try await ban(harness, account.userID)
            for statement in [
                "UPDATE audit_events SET reason = 'nothing happened'", "DELETE FROM audit_events",
                "DELETE FROM audit_events WHERE false", "TRUNCATE audit_events",
            ] {
                let error = await #expect(throws: PostgresError.self, "\(statement)") {
                    _ = try await harness.pool.query(PostgresQuery(statement))
                }
                #expect(error?.message.contains("audit_events is append-only") == true, "\(statement)")
            }
            let events = try await harness.admin.listAuditEvents(.init(), context: Self.operatorContext())
            #expect(events.events.map(\.reason) == ["cheating"])
        }
    }

    @Test func banInputIsCheckedWithMessagesThatSayWhatIsAllowed() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, appID: app.appId, email: "input@example.com")
            let now = clock.now.unixMilliseconds
            let latest = clock.now.addingTimeInterval(100 * 365.25 * 24 * 3600).unixMilliseconds
            let cases: [(IdentityV1.BanUserRequest, String)] = [
                (
                    .init(userId: account.userID, reason: ""),
                    "reason must be 1…500 characters (Unicode code points), got 0"
                ),
                (
                    .init(userId: account.userID, reason: String(repeating: "x", count: 501)),
                    "reason must be 1…500 characters (Unicode code points), got 501"
                ),
                (
                    .init(userId: account.userID, reason: "two\nlines"),
                    "reason must not hold control characters (line breaks, tabs, …)"
                ),
                (
                    .init(userId: account.userID, reason: "late", untilUnixMs: now),
                    "until_unix_ms must be 0 (a ban until lifted) or a time after now and at most 100 years ahead "
                        + "(\(now + 1)…\(latest)), got \(now)"
                ),
                (
                    .init(userId: account.userID, reason: "forever-ish", untilUnixMs: latest + 1),
                    "until_unix_ms must be 0 (a ban until lifted) or a time after now and at most 100 years ahead "
                        + "(\(now + 1)…\(latest)), got \(latest + 1)"
                ),
                (.init(userId: "ABC", reason: "x"), "user_id must be 32 lowercase hex digits, got \"ABC\""),
            ]
            for (request, message) in cases {
                let refused = await statusCode {
                    _ = try await harness.admin.banUser(request, context: Self.operatorContext())
                }
                #expect(refused?.code == .invalidArgument, "\(message)")
                #expect(refused?.message == message)
            }
            let unknown = await statusCode {
                _ = try await harness.admin.banUser(
                    .init(userId: RaveID.random().hex, reason: "x"), context: Self.operatorContext())
            }
            #expect(unknown?.code == .notFound)
            let player = await statusCode {
                _ = try await harness.admin.banUser(
                    .init(userId: account.userID, reason: "x"),
                    context: Harness.playerContext(account, appID: app.appId))
            }
            #expect(player?.code == .permissionDenied)
            for (request, message) in [
                (IdentityV1.ListAuditEventsRequest(pageSize: 101), "page_size must be 1…100 (0 means 50), got 101"),
                (.init(pageToken: "abc"), "page_token must be a next_page_token ListAuditEvents returned"),
                (
                    .init(sinceUnixMs: 2000, beforeUnixMs: 1000),
                    "since_unix_ms (2000) must be before before_unix_ms (1000)"
                ),
                (
                    .init(action: .unrecognized(99)),
                    "action must be AUDIT_ACTION_BAN_USER, AUDIT_ACTION_UNBAN_USER, AUDIT_ACTION_CREATE_OPERATOR, "
                        + "AUDIT_ACTION_SET_OPERATOR_ROLE, AUDIT_ACTION_DISABLE_OPERATOR, AUDIT_ACTION_ADMIN_CALL, "
                        + "AUDIT_ACTION_FORCE_ACCOUNT_DELETION, AUDIT_ACTION_CANCEL_ACCOUNT_DELETION or unspecified, "
                        + "got 99"
                ),
            ] {
                let refused = await statusCode {
                    _ = try await harness.admin.listAuditEvents(request, context: Self.operatorContext())
                }
                #expect(refused?.code == .invalidArgument)
                #expect(refused?.message == message)
            }
            #expect(try await harness.admin.listAuditEvents(.init(), context: Self.operatorContext()).events.isEmpty)
        }
    }
}
