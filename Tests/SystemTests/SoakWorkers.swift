import Foundation
import RaveMessages
import RaveRPC

/// One player's share of the soak load and everything it needs remembered for the checks afterwards: what the
/// server acknowledged, and what was left unknown by a failure (retried with the same ids at the end).
struct PlayerLoad: Sendable {
    var userID: String
    var caller: SoakCaller
    var bestAcknowledgedScore: Int64 = 0
    var acknowledgedScores = 0
    /// Calls whose outcome a failure hid, replayed by `resolve()`.
    var replayed = 0
    var attemptedScores: Set<Int64> = []
    /// Bet id → status, for every bet whose result the player saw.
    var bets: [String: WalletV1.BetStatus] = [:]
    var unresolvedBets: [WalletV1.Bet] = []
    /// Gift id → recipient, for every acknowledged gift.
    var gifts: [String: String] = [:]
    var unresolvedGifts: [GiftsV1.SendGiftsRequest] = []

    /// Scores, bets and (when the stack has gifts) gifts in a random mix until `deadline`.
    mutating func run(recipients: [String], withGifts: Bool, until deadline: ContinuousClock.Instant) async {
        var nextScore: Int64 = 1
        while ContinuousClock.now < deadline {
            let roll = Int.random(in: 0..<10)
            if roll < 4 {
                let score = nextScore
                nextScore += 1
                attemptedScores.insert(score)
                if (try? await caller.leaderboards.submitScore(.init(leaderboardKey: "soak", score: score))) != nil {
                    bestAcknowledgedScore = max(bestAcknowledgedScore, score)
                    acknowledgedScores += 1
                }
            } else if roll < 8 || !withGifts {
                let bet = WalletV1.Bet(
                    gameId: "dice", betId: UUID().hex, wager: "0.10", currency: "SOAK", economy: .sandbox,
                    clientSeed: "soak")
                if let result = try? await caller.wallet.placeBet(.init(bet: bet)).result {
                    bets[bet.betId] = result.status
                } else {
                    unresolvedBets.append(bet)
                }
            } else if let recipient = recipients.randomElement() {
                let request = GiftsV1.SendGiftsRequest(
                    giftTypeKey: "heart", recipientIds: [recipient], idempotencyKey: UUID().hex)
                if let sent = try? await caller.gifts.sendGifts(request) {
                    record(sent, recipient: recipient)
                } else {
                    unresolvedGifts.append(request)
                }
            }
        }
    }

    /// Replays every call whose outcome a failure hid, with the same bet ids and idempotency keys: each either
    /// returns the stored result or happens now, never twice.
    mutating func resolve() async throws {
        replayed += unresolvedBets.count + unresolvedGifts.count
        for bet in unresolvedBets {
            let result = try await retrying { try await caller.wallet.placeBet(.init(bet: bet)).result }
            bets[bet.betId] = result?.status ?? .unspecified
        }
        unresolvedBets = []
        for request in unresolvedGifts {
            let sent = try await retrying { try await caller.gifts.sendGifts(request) }
            record(sent, recipient: request.recipientIds.first ?? "")
        }
        unresolvedGifts = []
    }

    private mutating func record(_ sent: GiftsV1.SendGiftsResponse, recipient: String) {
        for result in sent.results where result.status == .sent { gifts[result.id] = recipient }
    }
}

/// Merges under load: each round makes a Facebook account and a Google account on two devices, then connects
/// Facebook on the second, merging it into the first.
struct MergeLoad: Sendable {
    struct Merge: Sendable {
        var source: SoakCaller
        var sourceID: String
        var targetID: String
        var facebookToken: String
        var mergeID: String?
    }

    var caller: SoakCaller
    var appID: String
    var providers: TestIdentityProviders
    var merges: [Merge] = []
    var replayed = 0

    mutating func run(until deadline: ContinuousClock.Instant) async {
        while ContinuousClock.now < deadline {
            let subject = UUID().hex
            guard let facebookToken = try? providers.token(.facebook, subject: "fb-\(subject)"),
                let googleToken = try? providers.token(.google, subject: "google-\(subject)"),
                let target = try? await login(provider: .facebook, token: facebookToken),
                let source = try? await login(provider: .google, token: googleToken)
            else { continue }
            var merge = Merge(
                source: caller.signedIn(source), sourceID: source.user?.profile?.userId ?? "",
                targetID: target.user?.profile?.userId ?? "", facebookToken: facebookToken)
            let connected = try? await merge.source.identity.connectProvider(
                .init(provider: .facebook, idToken: facebookToken))
            if case .merged(let done)? = connected?.outcome { merge.mergeID = done.mergeId }
            merges.append(merge)
        }
    }

    /// Connects Facebook again wherever the answer was lost; a merge that happened answers with the same merge.
    mutating func resolve() async throws {
        for index in merges.indices where merges[index].mergeID == nil {
            let merge = merges[index]
            replayed += 1
            let connected = try await retrying {
                try await merge.source.identity.connectProvider(
                    .init(provider: .facebook, idToken: merge.facebookToken))
            }
            if case .merged(let done)? = connected.outcome { merges[index].mergeID = done.mergeId }
        }
    }

    private func login(provider: IdentityV1.Provider, token: String) async throws -> IdentityV1.LoginResponse {
        let device = IdentityV1.DeviceInfo(deviceId: "soak-\(UUID().hex)", name: "soak", platform: "ios")
        let guest = try await caller.identity.guestLogin(.init(appId: appID, device: device))
        return try await caller.signedIn(guest).identity.loginWithProvider(
            .init(appId: appID, device: device, provider: provider, idToken: token))
    }
}

/// Runs `body` until it succeeds, for at most 30 s: after the failures stop, every service answers again.
func retrying<Result>(_ body: () async throws -> Result) async throws -> Result {
    let deadline = ContinuousClock.now.advanced(by: .seconds(30))
    while true {
        do {
            return try await body()
        } catch {
            guard ContinuousClock.now < deadline else { throw error }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
