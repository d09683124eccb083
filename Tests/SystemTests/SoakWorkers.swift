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
    private var nextScore: Int64 = 1

    init(userID: String, caller: SoakCaller) {
        self.userID = userID
        self.caller = caller
    }

    /// Scores, bets and (when the stack has gifts) gifts in a random mix until `deadline`.
    mutating func run(recipients: [String], withGifts: Bool, until deadline: ContinuousClock.Instant) async {
        while ContinuousClock.now < deadline { await step(recipients: recipients, withGifts: withGifts) }
    }

    /// `count` steps of the mix (a merged account's share of a merge round).
    func running(_ count: Int, recipients: [String], withGifts: Bool) async -> PlayerLoad {
        var load = self
        for _ in 0..<count { await load.step(recipients: recipients, withGifts: withGifts) }
        return load
    }

    /// One call of the mix: a rising score (40 %), a bet (40 %) or a gift (20 %, when the stack has gifts).
    mutating func step(recipients: [String], withGifts: Bool) async {
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
            do {
                bets[bet.betId] = try await caller.wallet.placeBet(.init(bet: bet)).result?.status ?? .unspecified
            } catch let error where error.code == .failedPrecondition {
                bets[bet.betId] = .failed  // Refused for want of funds, and stored so: a replay answers the same.
            } catch {
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

    /// The best score acknowledged to either load, and every score either sent (one account after a merge).
    static func united(_ loads: [PlayerLoad]) -> (best: Int64, attempted: Set<Int64>, acknowledged: Int) {
        (
            loads.map(\.bestAcknowledgedScore).max() ?? 0, loads.reduce([]) { $0.union($1.attemptedScores) },
            loads.reduce(0) { $0 + $1.acknowledgedScores }
        )
    }

    /// Replays every call whose outcome a failure hid, with the same bet ids and idempotency keys: each either
    /// returns the stored result or happens now, never twice.
    mutating func resolve() async throws {
        replayed += unresolvedBets.count + unresolvedGifts.count
        for bet in unresolvedBets {
            bets[bet.betId] = try await retrying {
                do {
                    return try await caller.wallet.placeBet(.init(bet: bet)).result?.status ?? .unspecified
                } catch let error as RPCError where error.code == .failedPrecondition {
                    return .failed
                }
            }
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

/// Merges under load, with both accounts playing around each one.
///
/// Each round makes a Facebook account and a Google account on two devices, then connects Facebook on the second,
/// merging it into the first. Both accounts play the soak's mix (scores, bets, gifts to the players) before the
/// merge, while it runs, and the source with its old token after it, as a game that has not switched tokens yet:
/// everything either acknowledged must end on the target once.
struct MergeLoad: Sendable {
    struct Merge: Sendable {
        var source: SoakCaller
        var sourceID: String
        var targetID: String
        var facebookToken: String
        var mergeID: String?
        /// What each account did (the source's calls include those made with its token after the merge).
        var sourceLoad: PlayerLoad
        var targetLoad: PlayerLoad

        var loads: [PlayerLoad] { [sourceLoad, targetLoad] }
    }

    var caller: SoakCaller
    var appID: String
    var providers: TestIdentityProviders
    /// Funds the merging accounts' bets (the operator, through the gateway).
    var admin: RPCClient
    var merges: [Merge] = []
    var replayed = 0

    mutating func run(recipients: [String], withGifts: Bool, until deadline: ContinuousClock.Instant) async {
        while ContinuousClock.now < deadline {
            let subject = UUID().hex
            guard let facebookToken = try? providers.token(.facebook, subject: "fb-\(subject)"),
                let googleToken = try? providers.token(.google, subject: "google-\(subject)"),
                let target = try? await login(provider: .facebook, token: facebookToken),
                let source = try? await login(provider: .google, token: googleToken)
            else { continue }
            let sourceID = source.user?.profile?.userId ?? ""
            let targetID = target.user?.profile?.userId ?? ""
            // A deposit lost to a failure only makes later bets fail for want of funds, which the checks allow.
            for user in [sourceID, targetID] { try? await fund(user) }
            var merge = Merge(
                source: caller.signedIn(source), sourceID: sourceID, targetID: targetID, facebookToken: facebookToken,
                sourceLoad: PlayerLoad(userID: sourceID, caller: caller.signedIn(source)),
                targetLoad: PlayerLoad(userID: targetID, caller: caller.signedIn(target)))
            merge.sourceLoad = await merge.sourceLoad.running(2, recipients: recipients, withGifts: withGifts)
            // Both accounts keep playing while the merge runs.
            let (sourceCaller, sourceLoad, targetLoad) = (merge.source, merge.sourceLoad, merge.targetLoad)
            async let connected = try? sourceCaller.identity.connectProvider(
                .init(provider: .facebook, idToken: facebookToken))
            async let sourceDuring = sourceLoad.running(3, recipients: recipients, withGifts: withGifts)
            async let targetDuring = targetLoad.running(3, recipients: recipients, withGifts: withGifts)
            if case .merged(let done)? = await connected?.outcome { merge.mergeID = done.mergeId }
            merge.sourceLoad = await sourceDuring
            merge.targetLoad = await targetDuring
            // The game still holds the source's token and keeps playing with it.
            merge.sourceLoad = await merge.sourceLoad.running(3, recipients: recipients, withGifts: withGifts)
            merges.append(merge)
        }
    }

    /// Connects Facebook again wherever the answer was lost (a merge that happened answers with the same merge), and
    /// replays the merged accounts' calls whose outcome a failure hid, with their own tokens.
    mutating func resolve() async throws {
        for index in merges.indices {
            if merges[index].mergeID == nil {
                let merge = merges[index]
                replayed += 1
                let connected = try await retrying {
                    try await merge.source.identity.connectProvider(
                        .init(provider: .facebook, idToken: merge.facebookToken))
                }
                if case .merged(let done)? = connected.outcome { merges[index].mergeID = done.mergeId }
            }
            try await merges[index].sourceLoad.resolve()
            try await merges[index].targetLoad.resolve()
        }
    }

    private func login(provider: IdentityV1.Provider, token: String) async throws -> IdentityV1.LoginResponse {
        let device = IdentityV1.DeviceInfo(deviceId: "soak-\(UUID().hex)", name: "soak", platform: "ios")
        let guest = try await caller.identity.guestLogin(.init(appId: appID, device: device))
        return try await caller.signedIn(guest).identity.loginWithProvider(
            .init(appId: appID, device: device, provider: provider, idToken: token))
    }

    private func fund(_ user: String) async throws {
        _ = try await WalletV1.WalletAdminClient(caller: admin).deposit(
            .init(
                transfer: .init(
                    operationId: UUID().hex, userId: user, currency: "SOAK", economy: .sandbox, amount: "10.00",
                    reason: "soak merge")))
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
