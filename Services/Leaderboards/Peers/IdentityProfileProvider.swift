import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import Synchronization

/// The production profiles: identity's `IdentityInternal/GetUsers`, behind a small cache.
///
/// Names are decoration on a score row, so a failing identity never fails the query: the rows go out without
/// names and the failure is logged once until identity answers again. Profiles (and unknown users, so a page of
/// deleted players does not ask every time) are kept for `timeToLive`; a changed display name shows within it.
final class IdentityProfileProvider: ProfileProvider {
    /// How many profiles are kept and for how long; every field has a default.
    struct Configuration: Sendable {
        /// Entries kept at most (default 10 000); a full cache drops expired entries, then the oldest quarter.
        var capacity = 10_000
        /// How long an answer is reused (default 60 s).
        var timeToLive: Duration = .seconds(60)
        /// The limit on one GetUsers call (default 2 s): a score page waits for it.
        var callTimeout: Duration = .seconds(2)
    }

    /// Identity takes at most this many ids per call.
    static let batchSize = 1000

    private struct Key: Hashable {
        var appID: String
        var userID: RaveID
    }

    private struct Entry {
        /// Nil for a user identity does not know.
        var profile: PlayerProfile?
        var storedAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var isFailing = false
    }

    private let client: IdentityV1.IdentityInternalClient
    private let configuration: Configuration
    private let logger: Logger
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    /// `caller` is an mTLS client carrying the leaderboards certificate, which identity requires of internal calls;
    /// `now` is injected so tests expire entries without sleeping.
    init(
        caller: any RPCCaller, configuration: Configuration = Configuration(), logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        client = IdentityV1.IdentityInternalClient(caller: caller)
        self.configuration = configuration
        self.logger = logger
        self.now = now
    }

    /// Entries currently cached, expired ones included (for tests).
    var cachedCount: Int { state.withLock { $0.entries.count } }

    func profiles(of userIDs: [RaveID], appID: String) async -> [RaveID: PlayerProfile] {
        let now = now()
        var found: [RaveID: PlayerProfile] = [:]
        var missing: [RaveID] = []
        state.withLock { state in
            for userID in Set(userIDs) {
                if let entry = state.entries[Key(appID: appID, userID: userID)],
                    entry.storedAt + configuration.timeToLive > now
                {
                    if let profile = entry.profile { found[userID] = profile }
                } else {
                    missing.append(userID)
                }
            }
        }
        guard !missing.isEmpty else { return found }
        do {
            let fetched = try await fetch(missing, appID: appID)
            found.merge(fetched) { cached, _ in cached }
            store(missing, fetched: fetched, appID: appID, at: now)
        } catch {
            let firstFailure = state.withLock { state in
                defer { state.isFailing = true }
                return !state.isFailing
            }
            if firstFailure {
                logger.warning(
                    "identity profiles unavailable; score rows go out without names until it answers",
                    [("error", "\(error)")])
            }
        }
        return found
    }

    private func fetch(_ userIDs: [RaveID], appID: String) async throws -> [RaveID: PlayerProfile] {
        var fetched: [RaveID: PlayerProfile] = [:]
        var start = 0
        while start < userIDs.count {
            let batch = userIDs[start..<min(userIDs.count, start + Self.batchSize)]
            start += Self.batchSize
            let response = try await client.getUsers(
                .init(userIds: batch.map(\.hex), appId: appID),
                options: CallOptions(timeout: configuration.callTimeout, maxRetries: 1))
            for user in response.users {
                // A merged source comes back under its target's id, which this page did not ask for: its row
                // stays nameless until the merge reaches leaderboards.
                guard let id = RaveID(user.userId) else { continue }
                fetched[id] = PlayerProfile(displayName: user.displayName, pictureURL: user.pictureUrl)
            }
        }
        return fetched
    }

    private func store(
        _ asked: [RaveID], fetched: [RaveID: PlayerProfile], appID: String, at now: ContinuousClock.Instant
    ) {
        let recovered = state.withLock { state in
            if state.entries.count + asked.count > configuration.capacity { evict(&state.entries, now: now) }
            for userID in asked {
                state.entries[Key(appID: appID, userID: userID)] = Entry(profile: fetched[userID], storedAt: now)
            }
            defer { state.isFailing = false }
            return state.isFailing
        }
        if recovered { logger.info("identity profiles available again") }
    }

    /// Drops expired entries, and the oldest quarter if that is not enough, so eviction is rare and a full cache
    /// does not evict on every page.
    private func evict(_ entries: inout [Key: Entry], now: ContinuousClock.Instant) {
        entries = entries.filter { $0.value.storedAt + configuration.timeToLive > now }
        guard entries.count > configuration.capacity * 3 / 4 else { return }
        let oldest = entries.sorted { $0.value.storedAt < $1.value.storedAt }.prefix(entries.count / 4)
        for (key, _) in oldest { entries.removeValue(forKey: key) }
    }
}
