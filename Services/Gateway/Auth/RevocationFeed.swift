import Foundation
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

/// The sessions identity has ended, kept so their access tokens are refused before they expire: the gateway's
/// deny-set, fed by polling `IdentityInternal/ListRevocations`.
///
/// Every gateway replica polls on its own every `interval` (250 ms by default), so a logout reaches every replica
/// within about one interval, and each call costs one dictionary lookup, never a database call. An entry is dropped
/// once every access token of its session has expired (identity says when), so the set holds only the sessions
/// ended within the last access-token lifetime.
///
/// Until the first poll has read the whole feed, and again after `maximumStaleness` without a successful poll
/// (identity unreachable), the verdict is `.unknown`: the gateway then refuses token-bearing calls (UNAVAILABLE,
/// not processed) rather than serve a session it cannot know is live. A `maximumStaleness` of zero keeps serving
/// on the last known set during an outage (after the first poll).
final class RevocationFeed: Service {
    let name = "revocations"

    /// What the deny-set says about a session.
    enum Verdict: Sendable, Equatable {
        /// Not ended, as of a recent poll.
        case live
        /// Ended: its tokens are refused.
        case revoked
        /// The set is not loaded yet, or too old to trust.
        case unknown
    }

    private let identity: IdentityV1.IdentityInternalClient
    private let interval: Duration
    private let maximumStaleness: UInt64
    private let logger: Logger
    private let latch = ShutdownLatch()

    private struct State {
        /// Ended sessions → when their last access token expires (Unix milliseconds, identity's clock).
        var denied: [String: Int64] = [:]
        var cursor: UInt64 = 0
        /// Monotonic time at which the last complete poll was sent; nil before the first.
        var heardAt: UInt64?
        var failing = false
        var lastPrune: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Told the users each poll found merged away (`observeMerges`).
    private let mergeObservers = Mutex<[@Sendable (Set<String>) -> Void]>([])

    /// Entries are pruned at most this often (a walk of the whole set).
    private static let pruneInterval: UInt64 = 5_000_000_000
    /// Revocations asked for per call; a longer backlog is read page by page before the poll counts.
    static let pageSize: UInt32 = 1000

    init(identity: any RPCCaller, interval: Duration, maximumStaleness: Duration, logger: Logger) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.interval = interval
        self.maximumStaleness = maximumStaleness.wholeNanoseconds
        self.logger = logger
    }

    /// Whether `sessionID` may be served now.
    func verdict(sessionID: String, now: UInt64 = monotonicNanoseconds()) -> Verdict {
        state.withLock { state in
            guard let heardAt = state.heardAt,
                maximumStaleness == 0 || now < heardAt || now - heardAt <= maximumStaleness
            else { return .unknown }
            return state.denied[sessionID] == nil ? .live : .revoked
        }
    }

    /// Whether the set has been loaded and is fresh enough to trust (`/readyz`).
    var isCurrent: Bool { verdict(sessionID: "") != .unknown }

    /// Sessions in the set now.
    var count: Int { state.withLock { $0.denied.count } }

    /// Calls `observer` with the users merged away, as each poll finds them (the authenticator forgets its cached
    /// resolutions of them, so their tokens act as the merge target at once).
    func observeMerges(_ observer: @escaping @Sendable (Set<String>) -> Void) {
        mergeObservers.withLock { $0.append(observer) }
    }

    /// Reads everything new in the feed; true when the whole backlog was read.
    @discardableResult
    func poll() async -> Bool {
        let started = monotonicNanoseconds()
        var cursor = state.withLock { $0.cursor }
        do {
            while true {
                let response = try await identity.listRevocations(
                    IdentityV1.ListRevocationsRequest(afterCursor: cursor, limit: Self.pageSize),
                    options: CallOptions(timeout: .seconds(2)))
                var merged: Set<String> = []
                state.withLock { state in
                    for revocation in response.revocations {
                        if !revocation.mergedUserId.isEmpty {
                            merged.insert(revocation.mergedUserId)
                        } else {
                            state.denied[revocation.sessionId] = revocation.expiresAtUnixMs
                        }
                    }
                    state.cursor = response.cursor
                }
                if !merged.isEmpty {
                    for observer in mergeObservers.withLock({ $0 }) { observer(merged) }
                }
                cursor = response.cursor
                if !response.more { break }
            }
        } catch {
            let first = state.withLock { state in
                defer { state.failing = true }
                return !state.failing
            }
            if first { logger.warning("reading identity's revocation feed failed", [("error", error.message)]) }
            return false
        }
        let recovered = state.withLock { state in
            defer { state.failing = false }
            state.heardAt = started
            if started &- state.lastPrune >= Self.pruneInterval {
                state.lastPrune = started
                let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                state.denied = state.denied.filter { $0.value > now }
            }
            return state.failing
        }
        if recovered { logger.info("identity's revocation feed is readable again") }
        return true
    }

    func run() async throws {
        while !latch.isOpen {
            await poll()
            await latch.sleep(for: interval)
        }
    }

    func shutdown() async {
        latch.open()
    }
}
