import Foundation
import RaveAuth
import RaveGatewayRules
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Operator accounts (docs/identity.md, "Operators").
///
/// Created by an owner or the admin certificate, enrolled with a
/// single-use code, logged in with password and a mandatory TOTP code (throttled like players' logins), short-lived
/// tokens of their own kind, refresh within the session's limits, and disabling ends every session on the revocation
/// feed. Identity's admin methods check the operator's role and publisher scope themselves.
@Suite("Operators")
struct OperatorTests {
    typealias Harness = IdentityHarness
    static let password = "a long operator password"

    /// An enrolled operator: its account, TOTP generator and a live session's tokens.
    struct Enrolled {
        var account: IdentityV1.Operator
        var totp: TOTP
        var tokens: IdentityV1.OperatorSessionTokens
    }

    /// The context of an admin call to `method` made by the admin certificate.
    static func certificate(_ method: String) -> RequestContext {
        var context = Harness.context(
            caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]),
            metadata: [MetadataKey.callerAdmin: "ops-root"])
        context.method = "rave.identity.v1.IdentityAdmin/\(method)"
        return context
    }

    /// The context of an admin call to `method` made with `tokens`, as the gateway passes it on.
    static func operatorContext(_ tokens: IdentityV1.OperatorSessionTokens, _ method: String) -> RequestContext {
        var context = Harness.context(
            caller: Caller(userID: "", appID: "", sessionID: tokens.sessionId, scopes: [Caller.adminScope]),
            metadata: [MetadataKey.callerOperator: tokens.account?.operatorId ?? ""])
        context.method = "rave.identity.v1.IdentityAdmin/\(method)"
        return context
    }

    static func loginContext(address: String = "198.51.100.7") -> RequestContext {
        Harness.context(caller: nil, metadata: [MetadataKey.clientAddress: address])
    }

    /// Creates (with the admin certificate), enrols and logs in an operator.
    static func enrol(
        _ harness: Harness, email: String, role: IdentityV1.OperatorRole, publisherID: String = "",
        allPublishers: Bool = false, now: Date = Date()
    ) async throws -> Enrolled {
        let created = try await harness.admin.createOperator(
            .init(
                email: email, role: role, publisherId: publisherID, allPublishers: allPublishers,
                reason: "new colleague"),
            context: certificate("CreateOperator"))
        let enrolled = try await harness.player.operatorEnroll(
            .init(enrolmentCode: created.enrolmentCode, password: password), context: Harness.anonymous)
        let totp = try #require(TOTP(base32Secret: enrolled.totpSecret))
        let tokens = try await harness.player.operatorLogin(
            .init(email: email, password: password, totpCode: try totp.code(at: now)), context: loginContext())
        return Enrolled(account: try #require(tokens.account), totp: totp, tokens: tokens)
    }

    @Test func operatorEnrolsOnceAndLogsInWithPasswordAndTOTPToATokenOfItsOwnKind() async throws {
        try await Harness.with { harness in
            let publisher = try await harness.makeApplication().publisherId
            let created = try await harness.admin.createOperator(
                .init(email: "alice@example.com", role: .support, publisherId: publisher, reason: "hired"),
                context: Self.certificate("CreateOperator"))
            #expect(created.account?.enrolled == false)
            #expect(created.enrolmentCode.count >= 40)
            // A password shorter than the operators' rule is refused before the code is looked at.
            let short = await statusCode {
                _ = try await harness.player.operatorEnroll(
                    .init(enrolmentCode: created.enrolmentCode, password: "short"), context: Harness.anonymous)
            }
            #expect(short?.code == .invalidArgument)
            let enrolled = try await harness.player.operatorEnroll(
                .init(enrolmentCode: created.enrolmentCode, password: Self.password), context: Harness.anonymous)
            #expect(enrolled.otpauthUrl.hasPrefix("otpauth://totp/Rave%20Console:alice%40example.com?secret="))
            let totp = try #require(TOTP(base32Secret: enrolled.totpSecret))

            // TOTP is mandatory: the right password alone, or with a wrong code, is refused alike.
            for code in ["", "000000"] {
                let refused = await statusCode {
                    _ = try await harness.player.operatorLogin(
                        .init(email: "alice@example.com", password: Self.password, totpCode: code),
                        context: Self.loginContext())
                }
                #expect(refused?.code == (code.isEmpty ? .invalidArgument : .unauthenticated), "\(code)")
            }
            let tokens = try await harness.player.operatorLogin(
                .init(email: "ALICE@example.com", password: Self.password, totpCode: try totp.code(at: Date())),
                context: Self.loginContext())
            #expect(tokens.account?.enrolled == true)
            #expect(tokens.account?.role == .support)
            // The same code is accepted once.
            let replay = await statusCode {
                _ = try await harness.player.operatorLogin(
                    .init(email: "alice@example.com", password: Self.password, totpCode: try totp.code(at: Date())),
                    context: Self.loginContext())
            }
            #expect(replay?.code == .unauthenticated)

            // The token: identity's keys, the operators' issuer, the role and scope; players' verifiers refuse it.
            let keys = try await harness.internalHandlers.signingKeys(.init(), context: Harness.serviceContext).keys
            let set = SigningKeySet(
                keys: try keys.map {
                    SigningKeySet.Key(keyID: $0.kid, publicKey: try Ed25519PublicKey(rawRepresentation: $0.publicKey))
                })
            let claims = try AccessTokenVerifier(keys: set, issuer: OperatorToken.issuer).verify(tokens.accessToken)
            #expect(claims.subject == created.account?.operatorId)
            #expect(claims.expiresAt - claims.issuedAt == 600)
            #expect(
                OperatorToken.grant(fromScopes: claims.scopes)
                    == OperatorToken.Grant(role: .support, publisherID: publisher))
            #expect(throws: CryptoError.self) { try AccessTokenVerifier(keys: set).verify(tokens.accessToken) }

            // The enrolment code was spent by the first login.
            let again = await statusCode {
                _ = try await harness.player.operatorEnroll(
                    .init(enrolmentCode: created.enrolmentCode, password: Self.password), context: Harness.anonymous)
            }
            #expect(again?.code == .invalidArgument)
        }
    }

    @Test func operatorPasswordGuessesAreThrottledLikePlayerLogins() async throws {
        try await Harness.with { harness in
            let operatorAccount = try await Self.enrol(
                harness, email: "ops@example.com", role: .owner, allPublishers: true)
            for _ in 0..<5 {
                let wrong = await statusCode {
                    _ = try await harness.player.operatorLogin(
                        .init(email: "ops@example.com", password: "not the password", totpCode: "123456"),
                        context: Self.loginContext(address: "203.0.113.9"))
                }
                #expect(wrong?.code == .unauthenticated)
            }
            let throttled = await statusCode {
                _ = try await harness.player.operatorLogin(
                    .init(
                        email: "ops@example.com", password: Self.password,
                        totpCode: try operatorAccount.totp.code(at: Date().addingTimeInterval(30))),
                    context: Self.loginContext(address: "203.0.113.9"))
            }
            #expect(throttled?.code == .resourceExhausted)
            #expect(throttled?.message.hasPrefix("too many failed logins") == true)
        }
    }

    @Test func refreshRotatesAndAReusedRefreshTokenEndsTheSessionOnTheFeed() async throws {
        try await Harness.with { harness in
            let enrolled = try await Self.enrol(harness, email: "ops@example.com", role: .owner, allPublishers: true)
            let cursor = try await harness.internalHandlers.listRevocations(.init(), context: Harness.serviceContext)
                .cursor
            let next = try await harness.player.operatorRefresh(
                .init(refreshToken: enrolled.tokens.refreshToken), context: Harness.anonymous)
            #expect(next.sessionId == enrolled.tokens.sessionId)
            #expect(next.refreshToken != enrolled.tokens.refreshToken)
            #expect(next.sessionExpiresAtUnixMs == enrolled.tokens.sessionExpiresAtUnixMs)
            let reused = await statusCode {
                _ = try await harness.player.operatorRefresh(
                    .init(refreshToken: enrolled.tokens.refreshToken), context: Harness.anonymous)
            }
            #expect(reused?.code == .unauthenticated)
            let feed = try await harness.internalHandlers.listRevocations(
                .init(afterCursor: cursor), context: Harness.serviceContext)
            #expect(feed.revocations.map(\.sessionId) == [enrolled.tokens.sessionId])
            let ended = await statusCode {
                _ = try await harness.player.operatorRefresh(
                    .init(refreshToken: next.refreshToken), context: Harness.anonymous)
            }
            #expect(ended?.code == .unauthenticated)
            // Identity itself refuses the ended session's admin calls.
            let call = await statusCode {
                _ = try await harness.admin.listOperators(
                    .init(), context: Self.operatorContext(enrolled.tokens, "ListOperators"))
            }
            #expect(call?.code == .unauthenticated)
        }
    }

    @Test func operatorSessionsEndWhenIdleAndAtTheirAbsoluteLimit() async throws {
        let clock = TestClock(Date())
        try await Harness.with(clock: clock) { harness in
            let enrolled = try await Self.enrol(
                harness, email: "ops@example.com", role: .viewer,
                publisherID: try await harness.makeApplication()
                    .publisherId, now: clock.now)
            clock.advance(by: 31 * 60)
            let idle = await statusCode {
                _ = try await harness.player.operatorRefresh(
                    .init(refreshToken: enrolled.tokens.refreshToken), context: Harness.anonymous)
            }
            #expect(idle?.message == "the operator session expired; log in again")

            // Refreshed every 20 minutes, a session still ends 8 hours after its login.
            let second = try await harness.player.operatorLogin(
                .init(
                    email: "ops@example.com", password: Self.password, totpCode: try enrolled.totp.code(at: clock.now)),
                context: Self.loginContext())
            var refresh = second.refreshToken
            for _ in 0..<23 {
                clock.advance(by: 20 * 60)
                refresh = try await harness.player.operatorRefresh(
                    .init(refreshToken: refresh), context: Harness.anonymous
                )
                .refreshToken
            }
            // A minute past the 8 hours (the database keeps microseconds, so exactly 8 hours may round either way).
            clock.advance(by: 21 * 60)
            let absolute = await statusCode {
                _ = try await harness.player.operatorRefresh(.init(refreshToken: refresh), context: Harness.anonymous)
            }
            #expect(absolute?.message == "the operator session expired; log in again")
        }
    }

    @Test func disablingAnOperatorEndsItsSessionsOnTheFeedAndRefusesItsLogins() async throws {
        try await Harness.with { harness in
            let enrolled = try await Self.enrol(harness, email: "ops@example.com", role: .owner, allPublishers: true)
            let cursor = try await harness.internalHandlers.listRevocations(.init(), context: Harness.serviceContext)
                .cursor
            let disabled = try await harness.admin.disableOperator(
                .init(operatorId: enrolled.account.operatorId, reason: "left the company"),
                context: Self.certificate("DisableOperator"))
            #expect(disabled.revokedSessions == 1)
            #expect(disabled.account?.disabled == true)
            let feed = try await harness.internalHandlers.listRevocations(
                .init(afterCursor: cursor), context: Harness.serviceContext)
            #expect(feed.revocations.map(\.sessionId) == [enrolled.tokens.sessionId])
            let login = await statusCode {
                _ = try await harness.player.operatorLogin(
                    .init(
                        email: "ops@example.com", password: Self.password,
                        totpCode: try enrolled.totp.code(at: Date().addingTimeInterval(30))),
                    context: Self.loginContext())
            }
            #expect(login?.code == .permissionDenied)
            let call = await statusCode {
                _ = try await harness.admin.listOperators(
                    .init(), context: Self.operatorContext(enrolled.tokens, "ListOperators"))
            }
            #expect(call?.code == .permissionDenied)
            // Recorded, with who did it and why.
            let events = try await harness.admin.listAuditEvents(
                .init(action: .disableOperator), context: Self.certificate("ListAuditEvents")
            ).events
            #expect(events.map(\.targetOperatorId) == [enrolled.account.operatorId])
            #expect(events.first?.actor == "ops-root")
            #expect(events.first?.reason == "left the company")
            #expect(events.first?.afterJson.contains("\"disabled\": true") == true)
        }
    }

    @Test func identityChecksTheOperatorsRoleAndRecordsItsWrites() async throws {
        try await Harness.with { harness in
            let application = try await harness.makeApplication()
            let user = try await harness.guestLogin(appID: application.appId, deviceID: "phone").userID
            let viewer = try await Self.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: application.publisherId)
            let support = try await Self.enrol(
                harness, email: "support@example.com", role: .support, publisherID: application.publisherId)
            // A viewer reads but cannot write: identity refuses it whatever the gateway let through.
            _ = try await harness.admin.getUser(
                .init(userId: user), context: Self.operatorContext(viewer.tokens, "GetUser"))
            let refused = await statusCode {
                _ = try await harness.admin.banUser(
                    .init(userId: user, reason: "cheating"), context: Self.operatorContext(viewer.tokens, "BanUser"))
            }
            #expect(refused?.code == .permissionDenied)
            #expect(refused?.message.contains("needs the operator role support or higher") == true)
            // Support may ban; the audit log names the operator.
            _ = try await harness.admin.banUser(
                .init(userId: user, reason: "cheating"), context: Self.operatorContext(support.tokens, "BanUser"))
            let byOperator = try await harness.admin.listAuditEvents(
                .init(actorKind: .operator, operatorId: support.account.operatorId),
                context: Self.operatorContext(viewer.tokens, "ListAuditEvents")
            ).events
            #expect(byOperator.map(\.action) == [.banUser])
            #expect(byOperator.first?.actor == "support@example.com")
            #expect(byOperator.first?.actorKind == .operator)
            #expect(byOperator.first?.finished == true)
            // Owner-only methods stay closed to support.
            let notOwner = await statusCode {
                _ = try await harness.admin.listOperators(
                    .init(), context: Self.operatorContext(support.tokens, "ListOperators"))
            }
            #expect(notOwner?.code == .permissionDenied)
        }
    }

    @Test func anOwnerOfOnePublisherActsOnlyWithinIt() async throws {
        try await Harness.with { harness in
            let own = try await harness.makeApplication()
            let other = try await harness.makeApplication()
            let owner = try await Self.enrol(
                harness, email: "owner@example.com", role: .owner, publisherID: own.publisherId)
            _ = try await harness.admin.getApplication(
                .init(appId: own.appId), context: Self.operatorContext(owner.tokens, "GetApplication"))
            let elsewhere = await statusCode {
                _ = try await harness.admin.getApplication(
                    .init(appId: other.appId), context: Self.operatorContext(owner.tokens, "GetApplication"))
            }
            #expect(elsewhere?.code == .permissionDenied)
            let newApp = await statusCode {
                _ = try await harness.admin.createApplication(
                    .init(publisherId: other.publisherId, name: "Theirs"),
                    context: Self.operatorContext(owner.tokens, "CreateApplication"))
            }
            #expect(newApp?.code == .permissionDenied)
            let publisher = await statusCode {
                _ = try await harness.admin.createPublisher(
                    .init(name: "Mine now"), context: Self.operatorContext(owner.tokens, "CreatePublisher"))
            }
            #expect(publisher?.code == .permissionDenied)
            // Operators it creates stay in its publisher; it cannot create an operator of all publishers.
            let everywhere = await statusCode {
                _ = try await harness.admin.createOperator(
                    .init(email: "root@example.com", role: .owner, allPublishers: true, reason: "promotion"),
                    context: Self.operatorContext(owner.tokens, "CreateOperator"))
            }
            #expect(everywhere?.code == .permissionDenied)
            _ = try await harness.admin.createOperator(
                .init(email: "colleague@example.com", role: .viewer, publisherId: own.publisherId, reason: "help"),
                context: Self.operatorContext(owner.tokens, "CreateOperator"))
            _ = try await Self.enrol(
                harness, email: "stranger@example.com", role: .viewer, publisherID: other.publisherId)
            let listed = try await harness.admin.listOperators(
                .init(), context: Self.operatorContext(owner.tokens, "ListOperators")
            ).operators.map(\.email)
            #expect(listed == ["colleague@example.com", "owner@example.com"])
        }
    }

    @Test func gatewayRecordedWritesCarryTheirOutcomeAndStayUnchangeable() async throws {
        try await Harness.with { harness in
            let enrolled = try await Self.enrol(harness, email: "ops@example.com", role: .owner, allPublishers: true)
            let noReason = await statusCode {
                _ = try await harness.internalHandlers.beginAdminCall(
                    .init(
                        method: "rave.wallet.v1.WalletAdmin/Deposit", actorKind: .operator,
                        operatorId: enrolled.account.operatorId, requestJson: "{}"),
                    context: Harness.serviceContext)
            }
            #expect(noReason?.code == .invalidArgument)
            let begun = try await harness.internalHandlers.beginAdminCall(
                .init(
                    method: "rave.wallet.v1.WalletAdmin/Deposit", actorKind: .operator,
                    operatorId: enrolled.account.operatorId, reason: "refund ticket 42",
                    requestJson: #"{"amount": "100"}"#),
                context: Harness.serviceContext)
            _ = try await harness.internalHandlers.finishAdminCall(
                .init(eventId: begun.eventId, statusCode: 0), context: Harness.serviceContext)
            // A second outcome does not replace the first.
            _ = try await harness.internalHandlers.finishAdminCall(
                .init(eventId: begun.eventId, statusCode: 13, statusMessage: "late"), context: Harness.serviceContext)
            let events = try await harness.admin.listAuditEvents(
                .init(method: "rave.wallet.v1.WalletAdmin/Deposit"), context: Self.certificate("ListAuditEvents")
            ).events
            #expect(events.count == 1)
            let event = try #require(events.first)
            #expect(event.action == .adminCall)
            #expect(event.actor == "ops@example.com")
            #expect(event.operatorId == enrolled.account.operatorId)
            #expect(event.reason == "refund ticket 42")
            #expect(event.requestJson == #"{"amount": "100"}"#)
            #expect(event.finished && event.statusCode == 0)
            for statement in ["UPDATE audit_outcomes SET status_code = 5", "DELETE FROM audit_outcomes"] {
                await #expect(throws: (any Error).self) { _ = try await harness.pool.query(PostgresQuery(statement)) }
            }
        }
    }
}
