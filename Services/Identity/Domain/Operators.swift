import Foundation
import RaveAuth
import RaveGatewayRules
import RaveMessages
import RavePostgres
import RaveRPC

/// Operator accounts' rules (docs/identity.md, "Operators"): lifetimes, the password rule, the tokens, and who an
/// admin call comes from.
enum Operators {
    /// An operator access token lives at most this long (never longer than a player's, so the revocation feed keeps
    /// an ended operator session as long as its tokens may live).
    static let accessTokenLifetime: Int64 = 600
    /// A session ends this long after its login, whatever its use.
    static let sessionLifetime: TimeInterval = 8 * 3600
    /// A session ends when not refreshed for this long.
    static let idleLifetime: TimeInterval = 30 * 60
    /// An enrolment code is good this long.
    static let enrolmentLifetime: TimeInterval = 72 * 3600
    /// The issuer shown by authenticator apps.
    static let totpIssuer = "Rave Console"

    /// An operator's password: 12…128 characters (longer than a player's minimum: operators hold every player's
    /// data).
    static func password(_ value: String) throws(IdentityError) -> String {
        guard (12...128).contains(value.count) else {
            throw .invalidArgument("password must be 12…128 characters, got \(value.count)")
        }
        return value
    }

    static func message(_ role: OperatorRole) -> IdentityV1.OperatorRole {
        switch role {
        case .viewer: .viewer
        case .support: .support
        case .operator: .operator
        case .owner: .owner
        }
    }

    /// The grant a request asks for: a known role, and a publisher or every publisher (owners only).
    static func grant(
        role: IdentityV1.OperatorRole, publisherID: String, allPublishers: Bool
    ) throws(IdentityError) -> OperatorToken.Grant {
        let parsed: OperatorRole
        switch role {
        case .viewer: parsed = .viewer
        case .support: parsed = .support
        case .operator: parsed = .operator
        case .owner: parsed = .owner
        default:
            throw .invalidArgument(
                "role must be OPERATOR_ROLE_VIEWER, OPERATOR_ROLE_SUPPORT, OPERATOR_ROLE_OPERATOR or OPERATOR_ROLE_OWNER"
            )
        }
        if allPublishers {
            guard publisherID.isEmpty else {
                throw .invalidArgument("set either publisher_id or all_publishers, not both")
            }
            guard parsed == .owner else {
                throw .invalidArgument("only an owner may act for all publishers; give a publisher_id")
            }
            return OperatorToken.Grant(role: parsed, publisherID: nil)
        }
        guard !publisherID.isEmpty else {
            throw .invalidArgument("publisher_id is required (or all_publishers, for an owner)")
        }
        return OperatorToken.Grant(
            role: parsed, publisherID: try Validation.raveID(publisherID, field: "publisher_id").hex)
    }
}

/// Who makes an admin call, as identity establishes it: the admin certificate (every method, every publisher), or
/// an operator whose session identity has checked is live and whose role and publisher scope it read itself.
struct AdminActor: Sendable {
    var audit: AuditActor
    /// Nil for the admin certificate.
    var grant: OperatorToken.Grant?

    /// PERMISSION_DENIED unless the caller acts for `publisher`.
    func requirePublisher(_ publisher: RaveID) throws(IdentityError) {
        guard let scoped = grant?.publisherID, scoped != publisher.hex else { return }
        throw .permissionDenied("this operator acts for publisher \(scoped) only, not \(publisher.hex)")
    }

    /// PERMISSION_DENIED unless the caller acts for every publisher.
    func requireAllPublishers(_ what: String) throws(IdentityError) {
        guard let scoped = grant?.publisherID else { return }
        throw .permissionDenied("\(what) needs an owner of all publishers; this operator acts for publisher \(scoped)")
    }

    /// PERMISSION_DENIED unless the caller may hand out `granted`: within its own scope, and no more than its role.
    func requireMayGrant(_ granted: OperatorToken.Grant) throws(IdentityError) {
        guard let grant else { return }
        if let publisher = granted.publisherID {
            if let scoped = grant.publisherID, scoped != publisher {
                throw .permissionDenied("this operator acts for publisher \(scoped) only, not \(publisher)")
            }
        } else {
            try requireAllPublishers("an operator of all publishers")
        }
        guard granted.role <= grant.role else {
            throw .permissionDenied("an operator may grant at most its own role (\(grant.role)), not \(granted.role)")
        }
    }
}

extension IdentityDependencies {
    /// The admin caller of `context`, or the refusal: the admin scope (the gateway's), and for an operator a live
    /// session of an enabled account whose role, as stored, reaches the method (`AdminRoles`).
    func admin(_ context: RequestContext) async throws -> AdminActor {
        _ = try context.requireAdmin()
        guard let operatorText = context.metadata[MetadataKey.callerOperator] else {
            let name = context.metadata[MetadataKey.callerAdmin] ?? ""
            return AdminActor(
                audit: AuditActor(
                    kind: .adminCertificate,
                    name: name.isEmpty ? "unnamed admin certificate" : String(name.unicodeScalars.prefix(256)),
                    operatorID: nil),
                grant: nil)
        }
        guard let operatorID = RaveID(operatorText),
            let sessionID = RaveID(context.caller?.sessionID ?? ""),
            let found = try await OperatorStore(database: pool).operatorOfSession(operatorID, sessionID: sessionID)
        else { throw IdentityError.unauthenticated("the operator session is unknown; log in again") }
        guard !found.record.disabled else { throw IdentityError.permissionDenied("this operator account is disabled") }
        guard found.live else { throw IdentityError.unauthenticated("the operator session has ended; log in again") }
        if let refusal = AdminRoles.refusal(method: context.method, role: found.record.grant.role) {
            throw IdentityError.permissionDenied(refusal)
        }
        return AdminActor(
            audit: AuditActor(kind: .operator, name: found.record.email, operatorID: operatorID),
            grant: found.record.grant)
    }

    /// An operator session's tokens: a signed access token (`OperatorToken`) and the refresh token as given.
    func operatorTokens(
        _ record: OperatorRecord, sessionID: RaveID, refreshToken: String, sessionExpiresAt: Date
    ) throws -> IdentityV1.OperatorSessionTokens {
        let issuedAt = Int64(clock().timeIntervalSince1970)
        let lifetime = min(Operators.accessTokenLifetime, configuration.accessTokenLifetime)
        let claims = AccessTokenClaims(
            issuer: OperatorToken.issuer, subject: record.id.hex, applicationID: "", sessionID: sessionID.hex,
            scopes: OperatorToken.scopes(for: record.grant), issuedAt: issuedAt, expiresAt: issuedAt + lifetime,
            tokenID: try OpaqueToken.generate(byteCount: 12))
        return IdentityV1.OperatorSessionTokens(
            accessToken: try signer.sign(claims), accessTokenExpiresAtUnixMs: claims.expiresAt * 1000,
            refreshToken: refreshToken, sessionId: sessionID.hex,
            sessionExpiresAtUnixMs: sessionExpiresAt.unixMilliseconds, account: record.message)
    }
}
