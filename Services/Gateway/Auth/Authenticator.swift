import Foundation
import RaveAuth
import RaveGatewayRules
import RaveMessages
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

/// Turns an `authorization: Bearer <access token>` into the caller the services see.
///
/// Tokens are verified offline with identity's public keys (about 0.1 ms each) and then kept in a bounded LRU
/// cache until they expire, so a client pays the verification once per token, not per call. The token's
/// subject is then resolved through identity's merge records (cached for `mergeCacheLifetime`): the token of
/// a merged-away user acts as the merge target.
///
/// Both ways in (`caller`, and `cachedCaller`/`loopCaller` for the loop paths) decide the same way: expiry by
/// `AccessTokenClaims.isExpired` with the verifier's clock skew, and the session against the revocation feed's
/// deny-set, on every call.
///
/// The loop paths keep a third cache, by `authorization` value: the caller resolved once (`LoopCaller`), so a warm
/// call makes one lookup and the per-call checks (expiry, the deny-set, the merge resolution's lifetime and whether
/// a merge was announced since) instead of parsing the header, looking the token and its user up and building the
/// caller and its forwarded metadata again.
final class Authenticator: Sendable {
    private let keys: SigningKeyStore
    private let revocations: RevocationFeed
    private let identity: IdentityV1.IdentityInternalClient
    private let mergeCacheLifetime: UInt64
    private let logger: Logger
    private let tokens: Mutex<LeastRecentlyUsed<String, AccessTokenClaims>>
    /// Operators' tokens, verified with their own issuer and never looked up in `tokens`: a token verified as one
    /// kind is never served as the other.
    private let operatorTokens: Mutex<LeastRecentlyUsed<String, AccessTokenClaims>>
    private let canonicalUsers: Mutex<LeastRecentlyUsed<String, (userID: String, expiresAt: UInt64)>>
    /// Players' tokens resolved for the loop paths, by the whole `authorization` value (`loopCaller`).
    private let loopCallers: Mutex<LeastRecentlyUsed<String, LoopCaller>>
    /// Counts the merges announced (`forgetResolutions`): a `LoopCaller` resolved before one is not served.
    private let resolutionEpoch = Atomic<UInt64>(0)

    init(
        keys: SigningKeyStore, revocations: RevocationFeed, identity: any RPCCaller, tokenCacheCapacity: Int,
        mergeCacheLifetime: Duration, logger: Logger
    ) {
        self.keys = keys
        self.revocations = revocations
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.mergeCacheLifetime = mergeCacheLifetime.wholeNanoseconds
        self.logger = logger
        self.tokens = Mutex(LeastRecentlyUsed(capacity: tokenCacheCapacity))
        self.operatorTokens = Mutex(LeastRecentlyUsed(capacity: max(1, tokenCacheCapacity / 16)))
        self.canonicalUsers = Mutex(LeastRecentlyUsed(capacity: tokenCacheCapacity))
        self.loopCallers = Mutex(LeastRecentlyUsed(capacity: tokenCacheCapacity))
        revocations.observeMerges { [weak self] users in self?.forgetResolutions(of: users) }
    }

    /// Forgets the cached resolutions of `users` (merged away) and of users resolved to them (merged into them
    /// earlier).
    ///
    /// The next call asks identity, which names the final target. The cache is only an optimisation: services
    /// resolve merged ids themselves.
    func forgetResolutions(of users: Set<String>) {
        canonicalUsers.withLock { cache in
            cache.removeAll { user, resolved in users.contains(user) || users.contains(resolved.userID) }
        }
        // After the removal: a `LoopCaller` built from a resolution read before it carries an older epoch.
        resolutionEpoch.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    /// The caller a bearer credential stands for, or UNAUTHENTICATED.
    ///
    /// `authorization` is the metadata value, "Bearer <token>" (the scheme is case-insensitive).
    func caller(authorization: String, now: Date = Date()) async throws(RPCError) -> Caller {
        let claims = try await verifiedClaims(try Self.bearerToken(authorization), now: now)
        switch revocations.verdict(sessionID: claims.sessionID) {
        case .live: break
        case .revoked: throw .unauthenticated("the session has ended; log in again")
        case .unknown:
            throw .unavailable(
                "the gateway cannot tell whether the session is live: identity's revocation feed is unreachable",
                notProcessed: true)
        }
        let userID = try await canonicalUserID(claims.subject)
        return Caller(
            userID: userID, appID: claims.applicationID, sessionID: claims.sessionID, scopes: Set(claims.scopes))
    }

    /// The operator an `authorization: Bearer <operator access token>` stands for (admin methods without the admin
    /// certificate), or why not: UNAUTHENTICATED for a token that is expired, forged or of an ended session,
    /// PERMISSION_DENIED for a player's token (it never reaches an admin method).
    func operatorCaller(authorization: String, now: Date = Date()) async throws(RPCError) -> OperatorCaller {
        let token = try Self.bearerToken(authorization)
        let claims = try await verifiedClaims(token, now: now, kind: .operator)
        guard let grant = OperatorToken.grant(fromScopes: claims.scopes) else {
            throw .unauthenticated("the operator access token carries no role; log in again")
        }
        switch revocations.verdict(sessionID: claims.sessionID) {
        case .live: break
        case .revoked: throw .unauthenticated("the operator session has ended; log in again")
        case .unknown:
            throw .unavailable(
                "the gateway cannot tell whether the session is live: identity's revocation feed is unreachable",
                notProcessed: true)
        }
        return OperatorCaller(operatorID: claims.subject, sessionID: claims.sessionID, grant: grant)
    }

    /// The caller of a token verified before whose subject was resolved recently, found without waiting; nil
    /// when anything is missing, expired, revoked or unknown to a stale deny-set (then `caller(authorization:)`
    /// decides, with the same caches and rules), and for a token restricted to some methods (`ScopePolicy`),
    /// which only the general path admits.
    func cachedCaller(authorization: String, now: Date = Date()) -> Caller? {
        loopCaller(authorization: authorization, now: now)?.caller
    }

    /// `cachedCaller` with what the loop paths forward for it: one lookup by the `authorization` value when the
    /// token was resolved on this path before, else the token and user caches (and the result kept for next time).
    ///
    /// Every call checks, as `cachedCaller` always did: the token's expiry, its session against the deny-set, and
    /// the user's resolution (its lifetime, and that no merge was announced since it was read).
    func loopCaller(authorization: String, now: Date = Date()) -> LoopCaller? {
        let monotonicNow = monotonicNanoseconds()
        if let known = loopCallers.withLock({ $0.value(for: authorization) }),
            known.epoch == resolutionEpoch.load(ordering: .sequentiallyConsistent),
            known.userExpiresAt > monotonicNow
        {
            guard !known.claims.isExpired(at: now, clockSkew: keys.clockSkew),
                revocations.verdict(sessionID: known.claims.sessionID) == .live
            else { return nil }
            return known
        }
        // Read before the resolution, so a merge announced in between leaves the new entry stale, not wrong.
        let epoch = resolutionEpoch.load(ordering: .sequentiallyConsistent)
        guard let token = try? Self.bearerToken(authorization),
            let claims = tokens.withLock({ $0.value(for: token) }),
            !claims.isExpired(at: now, clockSkew: keys.clockSkew),
            revocations.verdict(sessionID: claims.sessionID) == .live,
            let user = canonicalUsers.withLock({ $0.value(for: claims.subject) }),
            user.expiresAt > monotonicNow
        else { return nil }
        let scopes = Set(claims.scopes)
        guard !ScopePolicy.isRestricted(scopes) else { return nil }
        let resolved = LoopCaller(
            caller: Caller(
                userID: user.userID, appID: claims.applicationID, sessionID: claims.sessionID, scopes: scopes),
            claims: claims, userExpiresAt: user.expiresAt, epoch: epoch)
        loopCallers.withLock { $0.insert(resolved, for: authorization) }
        return resolved
    }

    /// The token of an `authorization` value.
    ///
    /// Works on the UTF-8 bytes: it runs on every call, and character-level string work (Foundation's trimming,
    /// grapheme breaking) cost more than the rest of the gateway's path together.
    static func bearerToken(_ authorization: String) throws(RPCError) -> String {
        // Two words separated by blanks, scanned in place: splitting allocated an array per call.
        let bytes = authorization.utf8
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let schemeStart = bytes.firstIndex { !isBlank($0) } ?? bytes.endIndex
        let schemeEnd = bytes[schemeStart...].firstIndex(where: isBlank) ?? bytes.endIndex
        let tokenStart = bytes[schemeEnd...].firstIndex { !isBlank($0) } ?? bytes.endIndex
        let tokenEnd = bytes[tokenStart...].firstIndex(where: isBlank) ?? bytes.endIndex
        let scheme = "bearer".utf8
        guard tokenStart < tokenEnd, bytes[tokenEnd...].allSatisfy(isBlank),
            bytes[schemeStart..<schemeEnd].count == scheme.count,
            zip(bytes[schemeStart..<schemeEnd], scheme).allSatisfy({ $0 | 0x20 == $1 })
        else {
            throw .unauthenticated("authorization must be \"Bearer <access token>\"")
        }
        return String(Substring(bytes[tokenStart..<tokenEnd]))
    }

    // MARK: - Tokens

    /// Which kind of token a path accepts: each has its own issuer, verifier and cache.
    enum TokenKind: Sendable {
        case player
        case `operator`

        var issuer: String { self == .player ? AccessTokenClaims.defaultIssuer : OperatorToken.issuer }
    }

    /// `verifier` for tokens of `kind` (the same keys, the kind's issuer).
    private func verifier(_ verifier: AccessTokenVerifier?, for kind: TokenKind) -> AccessTokenVerifier? {
        guard let verifier, verifier.issuer != kind.issuer else { return verifier }
        return AccessTokenVerifier(keys: verifier.keys, issuer: kind.issuer, clockSkew: verifier.clockSkew)
    }

    private func verifiedClaims(
        _ token: String, now: Date, kind: TokenKind = .player
    ) async throws(RPCError) -> AccessTokenClaims {
        let cached =
            kind == .player
            ? tokens.withLock { $0.value(for: token) } : operatorTokens.withLock { $0.value(for: token) }
        if let claims = cached {
            if !claims.isExpired(at: now, clockSkew: keys.clockSkew) { return claims }
            if kind == .player {
                tokens.withLock { $0.remove(token) }
            } else {
                operatorTokens.withLock { $0.remove(token) }
            }
            throw .unauthenticated("the access token has expired; refresh the session")
        }
        var verifier = keys.verifier
        if let keyID = AccessTokenVerifier.keyID(ofToken: token), verifier?.keys.publicKey(forKeyID: keyID) == nil {
            // A key we have not seen: identity may have rotated. The store rate-limits these fetches.
            await keys.refreshIfAllowed()
            verifier = keys.verifier
        }
        guard let verifier = self.verifier(verifier, for: kind) else {
            throw .unavailable("the gateway cannot verify tokens yet: identity's signing keys are unreachable")
        }
        let claims: AccessTokenClaims
        do {
            claims = try verifier.verify(token, now: now)
        } catch {
            if error.reason == .expiredToken {
                throw .unauthenticated("the access token has expired; refresh the session")
            }
            // A genuine token of the other kind: say which methods it is for rather than call it invalid.
            let other = self.verifier(verifier, for: kind == .player ? .operator : .player)
            if (try? other?.verify(token, now: now)) != nil {
                throw .permissionDenied(
                    kind == .player
                        ? "an operator's access token reaches only admin methods; this method needs a player's"
                        : "admin methods need the admin certificate or an operator's access token; a player's "
                            + "access token is not one")
            }
            throw .unauthenticated("the access token is invalid: \(error.message)")
        }
        if kind == .player {
            tokens.withLock { $0.insert(claims, for: token) }
        } else {
            operatorTokens.withLock { $0.insert(claims, for: token) }
        }
        return claims
    }

    // MARK: - Merged users

    private func canonicalUserID(_ userID: String) async throws(RPCError) -> String {
        let now = monotonicNanoseconds()
        if let cached = canonicalUsers.withLock({ $0.value(for: userID) }), cached.expiresAt > now {
            return cached.userID
        }
        var request = IdentityV1.ResolveUsersRequest()
        request.userIds = [userID]
        let resolved: String
        do {
            let response = try await identity.resolveUsers(request, options: CallOptions(timeout: .seconds(2)))
            resolved = response.users.first { $0.requestedId == userID }?.canonicalId ?? ""
        } catch {
            // Identity unreachable: the token is genuine, so serve its own subject rather than fail every call;
            // only a user merged within the outage is affected, and not cached so it is corrected soon.
            logger.warning("resolving a merged user failed", [("user", userID), ("error", error.message)])
            return userID
        }
        guard !resolved.isEmpty else { throw .unauthenticated("the access token's user no longer exists") }
        canonicalUsers.withLock { $0.insert((resolved, now &+ mergeCacheLifetime), for: userID) }
        return resolved
    }
}

/// A player's token as the loop paths serve it (`Authenticator.loopCaller`): resolved once, checked on every call.
final class LoopCaller: Sendable {
    /// The caller as `Authenticator.cachedCaller` gives it: the canonical user, the token's scopes.
    let caller: Caller
    /// The verified claims, for the expiry rule and the session's deny-set lookup on every call.
    let claims: AccessTokenClaims
    /// When the user's resolution through merges is to be read again (monotonic nanoseconds).
    let userExpiresAt: UInt64
    /// `Authenticator`'s merge count when the resolution was read.
    let epoch: UInt64
    /// The `rave-caller-*` entries the gateway forwards for this caller on a call without the admin certificate:
    /// `CallPipeline.callerEntries` of the caller `CallAdmission` admits there, computed once.
    let forwardedEntries: [(key: String, value: String)]
    /// The last metadata forwarded for this caller and what it was made from: a player's client sends the same
    /// entries from the same host call after call, so the forwarded bytes are reused instead of made again.
    private let lastForwarded = Mutex<(host: String, incoming: [UInt8], forwarded: EncodedMetadata)?>(nil)
    /// Client metadata longer than this is not kept in `lastForwarded` (a cached token's memory stays small).
    static let rememberedMetadataBytes = 1024

    init(caller: Caller, claims: AccessTokenClaims, userExpiresAt: UInt64, epoch: UInt64) {
        self.caller = caller
        self.claims = claims
        self.userExpiresAt = userExpiresAt
        self.epoch = epoch
        self.forwardedEntries = CallPipeline.callerEntries(
            of: CallAdmission<BackendPool>.playerCaller(caller, isAdmin: false))
    }

    /// The metadata forwarded for this caller from a client at `host` that sent `incoming` on a single call: the
    /// entries of `incoming` not in `CallPipeline.strippedKeys`, the client's address, then `forwardedEntries`
    /// (`CallPipeline.forwardedMetadata`).
    ///
    /// Reuses the last result when `host` and the bytes of `incoming` are the same as then.
    func forwardedMetadata(incoming: EncodedMetadata, host: String) -> EncodedMetadata {
        let bytes = incoming.bytes
        if let last = lastForwarded.withLock({ $0 }), last.host == host, Self.same(last.incoming, bytes) {
            return last.forwarded
        }
        var added: [(key: String, value: String)] = [(CallPipeline.clientAddressKey, host)]
        added.append(contentsOf: forwardedEntries)
        let forwarded = incoming.replacing(CallPipeline.strippedKeys, with: added)
        if bytes.count <= Self.rememberedMetadataBytes {
            let remembered = (host, Array(bytes), forwarded)
            lastForwarded.withLock { $0 = remembered }
        }
        return forwarded
    }

    /// Whether `remembered` and `bytes` hold the same bytes (one `memcmp`).
    private static func same(_ remembered: [UInt8], _ bytes: ArraySlice<UInt8>) -> Bool {
        guard remembered.count == bytes.count else { return false }
        guard !bytes.isEmpty else { return true }
        return remembered.withUnsafeBytes { remembered in
            bytes.withUnsafeBytes { memcmp(remembered.baseAddress!, $0.baseAddress!, $0.count) == 0 }
        }
    }
}

/// An operator's access token as the gateway verified it: who, in which session, with which role and scope.
struct OperatorCaller: Sendable, Hashable {
    var operatorID: String
    var sessionID: String
    var grant: OperatorToken.Grant
}
