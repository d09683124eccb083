import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Operator accounts' own methods: enrolment, login (password and TOTP), refresh and logout (docs/identity.md,
/// "Operators"). They need no token; the gateway treats them as login methods.
extension PlayerHandlers {
    func operatorEnroll(
        _ request: IdentityV1.OperatorEnrollRequest, context: RequestContext
    ) async throws -> IdentityV1.OperatorEnrollResponse {
        let code = try Validation.text(request.enrolmentCode, field: "enrolment_code", maximum: 256)
        let password = try Operators.password(request.password)
        let hash = try await dependencies.passwordHashers.withSlot { try await $0.hash(password) }
        let totp = try TOTP.generate()
        let record = try await dependencies.pool.transaction { transaction in
            let store = OperatorStore(database: transaction)
            guard let record = try await store.record(enrolmentCode: code, now: dependencies.clock()) else {
                throw IdentityError.invalidArgument(
                    "the enrolment code is wrong, used or expired; ask an owner for a new operator account")
            }
            try await store.setCredentials(
                record.id, passwordHash: hash, totpSecret: totp.secret, secrets: dependencies.secretKeys)
            return record
        }
        return IdentityV1.OperatorEnrollResponse(
            operatorId: record.id.hex, email: record.email, totpSecret: totp.base32Secret,
            otpauthUrl: totp.provisioningURL(issuer: Operators.totpIssuer, account: record.email))
    }

    func operatorLogin(
        _ request: IdentityV1.OperatorLoginRequest, context: RequestContext
    ) async throws -> IdentityV1.OperatorSessionTokens {
        let email = try Validation.text(request.email, field: "email", maximum: 254)
        let password = try Validation.text(request.password, field: "password", maximum: 128)
        let code = try Validation.text(request.totpCode, field: "totp_code", maximum: 16)
        let address = context.metadata[MetadataKey.clientAddress]
        let wrong = IdentityError.unauthenticated("the email, password or code is wrong")
        let store = OperatorStore(database: dependencies.pool)
        // As a player's login: a hashing slot, the throttle's charge, then the hash (a decoy for an unknown email or
        // an account without a password yet). Operators' counters are their own (`operator:` accounts).
        let record = try await dependencies.passwordHashers.withSlot { hashing in
            try await dependencies.loginThrottle.attempt(
                .password, account: "operator:\(email.lowercased())", address: address
            ) { () async throws -> OperatorRecord? in
                let record = try await store.record(email: email)
                return try await hashing.verify(password, against: record?.passwordHash) ? record : nil
            }
        }
        guard let record else { throw wrong }
        let now = dependencies.clock()
        // The second factor is mandatory, throttled like players' codes, and each code is accepted once.
        let accepted = try await dependencies.loginThrottle.attempt(
            .twoFactor, account: "operator:\(record.id.hex)", address: address
        ) { () async throws -> Bool? in
            try await dependencies.pool.transaction { transaction in
                let store = OperatorStore(database: transaction)
                guard let totp = try await store.totp(record.id, secrets: dependencies.secretKeys),
                    let step = try TOTP(secret: totp.secret).verify(code, at: now, lastUsedStep: totp.lastStep),
                    try await store.acceptStep(record.id, step: step)
                else { return nil }
                return true
            }
        }
        guard accepted != nil else { throw wrong }
        guard !record.disabled else { throw IdentityError.permissionDenied("this operator account is disabled") }
        let expiresAt = now.addingTimeInterval(Operators.sessionLifetime)
        return try await dependencies.pool.transaction { transaction in
            let store = OperatorStore(database: transaction)
            // Locked, so a disable committing meanwhile is seen (its sessions' end would miss this one otherwise).
            guard var current = try await store.record(record.id), !current.disabled else {
                throw IdentityError.permissionDenied("this operator account is disabled")
            }
            if !current.enrolled {
                try await store.markEnrolled(record.id)
                current.enrolled = true
            }
            let session = try await store.openSession(operatorID: record.id, now: now, expiresAt: expiresAt)
            return try dependencies.operatorTokens(
                current, sessionID: session.sessionID, refreshToken: session.refreshToken, sessionExpiresAt: expiresAt)
        }
    }

    func operatorRefresh(
        _ request: IdentityV1.OperatorRefreshRequest, context: RequestContext
    ) async throws -> IdentityV1.OperatorSessionTokens {
        let token = try Validation.text(request.refreshToken, field: "refresh_token", maximum: 256)
        let now = dependencies.clock()
        let outcome: Result<IdentityV1.OperatorSessionTokens, IdentityError> = try await dependencies.pool.transaction {
            transaction in
            let store = OperatorStore(database: transaction)
            guard let found = try await store.refreshLookup(token) else {
                return .failure(.unauthenticated("the refresh token is not valid; log in again"))
            }
            if found.revoked { return .failure(.unauthenticated("the operator session was ended; log in again")) }
            guard found.tokenGeneration == found.sessionGeneration else {
                // An old token came back: someone holds a copy. The session ends so neither works.
                try await store.revoke(sessionID: found.sessionID, reason: "reuse")
                return .failure(
                    .unauthenticated("the refresh token was already used; the session is ended, log in again"))
            }
            guard found.expiresAt > now, now.timeIntervalSince(found.lastUsedAt) < Operators.idleLifetime else {
                return .failure(.unauthenticated("the operator session expired; log in again"))
            }
            guard let record = try await store.record(found.operatorID), !record.disabled else {
                return .failure(.permissionDenied("this operator account is disabled"))
            }
            let next = try await store.rotate(found.sessionID, now: now)
            return .success(
                try dependencies.operatorTokens(
                    record, sessionID: found.sessionID, refreshToken: next, sessionExpiresAt: found.expiresAt))
        }
        return try outcome.get()
    }

    func operatorLogout(
        _ request: IdentityV1.OperatorLogoutRequest, context: RequestContext
    ) async throws -> IdentityV1.OperatorLogoutResponse {
        let token = try Validation.text(request.refreshToken, field: "refresh_token", maximum: 256)
        try await dependencies.pool.transaction { transaction in
            let store = OperatorStore(database: transaction)
            guard let found = try await store.refreshLookup(token) else {
                throw IdentityError.unauthenticated("the refresh token is not valid")
            }
            try await store.revoke(sessionID: found.sessionID, reason: "logout")
        }
        return IdentityV1.OperatorLogoutResponse()
    }
}
