import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Wallet

/// Bet settlement without a database: what a unit plays to, which rows it writes and what it answers.
@Suite struct RoundPlayTests {
    static let usd = Currency(code: "USD", decimals: 2)
    static let real = WalletV1.Economy.real.rawValue
    static let seedBytes = Array(UInt8(0)..<32)
    static let house: Int64 = 1
    /// A coin toss paying 3× the wager on heads.
    static let coin: GameMath = {
        let definition = WalletV1.OddsDefinition(
            sides: 2, winningNumbers: 1, multiplierNumerator: 3, multiplierDenominator: 1)
        do { return .odds(try OddsGame(definition)) } catch { preconditionFailure("the coin toss is valid: \(error)") }
    }()

    /// A round with `users`' seeds at nonce 5 and their USD wallets (account 100, 101, …) holding `balance`.
    static func round(users: [RaveID], balance: Int64) -> RoundPlay {
        var round = RoundPlay()
        for (index, user) in users.enumerated() {
            round.seeds[user] = RoundPlay.Seed(
                id: Int64(index + 1), bytes: seedBytes, hash: "hash-\(index)", nextNonce: 5)
            round.playerAccounts[wallet(of: user)] = Int64(100 + index)
            round.balances[Int64(100 + index)] = balance
        }
        round.houseAccounts[.house(game: "coin", currency: "USD", economy: real)] = house
        return round
    }

    static func wallet(of user: RaveID) -> AccountKey {
        AccountKey(kind: .user, userID: user, gameID: "", currency: "USD", economy: real)
    }

    static func bet(
        _ user: RaveID, wager: Int64, clientSeed: String = "seed", kind: PreparedBet.Kind = .backed, chain: String = ""
    ) -> PreparedBet {
        let id = RaveID.random()
        let creditGame = kind == .credit || kind == .unbackedCredit ? "coin" : ""
        let canonical = PreparedBet.canonicalRequest(
            gameID: "coin", wager: wager, currency: "USD", economy: real, lines: [], clientSeed: clientSeed, kind: kind,
            creditGameID: creditGame)
        return PreparedBet(
            userID: user, betID: id, betIDText: id.hex, gameID: "coin", math: coin, currency: usd, economy: .real,
            wager: wager, lines: [], clientSeed: clientSeed, kind: kind, creditGameID: creditGame, chainID: chain,
            requestHash: Digest.sha256(canonical))
    }

    /// A client seed whose draw at `nonce` wins (or loses) the coin toss.
    static func clientSeed(winning: Bool, nonce: Int64) throws -> String {
        for index in 0..<256 {
            var random = FairRandom(serverSeed: seedBytes, clientSeed: "c\(index)", nonce: nonce)
            if try (coin.play(wager: 100, lines: [], random: &random).payout > 0) == winning { return "c\(index)" }
        }
        throw WalletError.invalidArgument("no client seed found")
    }

    /// The transfers of `round` as (code, from, to, amount, from after, to after); -1 is "no running balance".
    static func transfers(_ round: RoundPlay) -> [String] {
        let rows = round.transfers
        return (0..<rows.count).map { row in
            "\(rows.codes[row]) \(rows.fromAccounts[row])→\(rows.toAccounts[row]) \(rows.amounts[row]) "
                + "\(rows.fromBalancesAfter[row])/\(rows.toBalancesAfter[row])"
        }
    }

    /// The bet rows of `round` as (status, payout, seed, nonce).
    static func bets(_ round: RoundPlay) -> [String] {
        let rows = round.bets
        return (0..<rows.count).map { row in
            "\(rows.statuses[row]) \(rows.payouts[row]) \(rows.seedID(at: row).map(String.init) ?? "-") "
                + "\(rows.nonce(at: row).map(String.init) ?? "-")"
        }
    }

    @Test func aWinningBetTransfersTheWagerAndThePayoutWithTheBalancesAfter() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        let bet = Self.bet(user, wager: 100, clientSeed: try Self.clientSeed(winning: true, nonce: 5))
        let results = try round.play([bet])
        #expect(Self.transfers(round) == ["bet_wager 100→1 100 900/-1", "bet_payout 1→100 300 -1/1200"])
        #expect(Self.bets(round) == ["settled 300 1 5"])
        let result = try #require(results.first)
        #expect(result.status == .settled && result.payout == "3.00" && result.balance == "12.00")
        #expect(result.nonce == 5 && result.serverSeedHash == "hash-0" && result.betId == bet.betIDText)
        // The stored row carries exactly the answer.
        #expect(try round.bets.result(at: 0).withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) } == result)
        #expect(round.balances[100] == 1_200 && round.seeds[user]?.nextNonce == 6)
    }

    @Test func aLosingBetTransfersOnlyTheWager() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        let results = try round.play([
            Self.bet(user, wager: 100, clientSeed: try Self.clientSeed(winning: false, nonce: 5))
        ])
        #expect(Self.transfers(round) == ["bet_wager 100→1 100 900/-1"])
        #expect(Self.bets(round) == ["settled 0 1 5"])
        #expect(results.map(\.balance) == ["9.00"] && results.map(\.payout) == ["0.00"])
        #expect(round.balances[100] == 900)
    }

    @Test func aBetShortOfMoneyIsWrittenAsFailedWithoutADrawAndMovesNothing() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 99)
        let results = try round.play([Self.bet(user, wager: 100)])
        #expect(Self.transfers(round).isEmpty)
        #expect(Self.bets(round) == ["failed 0 - -"])
        let result = try #require(results.first)
        #expect(result.status == .failed && result.errorCode == StatusCode.failedPrecondition.rawValue)
        #expect(result.errorMessage == "insufficient funds in USD" && result.nonce == 0 && result.balance.isEmpty)
        #expect(round.balances[100] == 99 && round.seeds[user]?.nextNonce == 5)
    }

    /// The chain's first two bets could be paid, its third not: the chain is undone whole and each of its bets is
    /// written as failed, while the unit played before it keeps its rows.
    @Test func aChainWhoseLaterBetRunsOutOfMoneyIsUndoneWhole() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        _ = try round.play([Self.bet(user, wager: 100, clientSeed: try Self.clientSeed(winning: false, nonce: 5))])
        let chain = [100, 100, 5_000].map { Self.bet(user, wager: Int64($0), chain: "c") }
        let results = try round.play(chain)
        #expect(results.allSatisfy { $0.status == .failed })
        #expect(results.map(\.errorMessage) == Array(repeating: "chain c failed: insufficient funds in USD", count: 3))
        #expect(Self.transfers(round) == ["bet_wager 100→1 100 900/-1"])
        #expect(Self.bets(round) == ["settled 0 1 5", "failed 0 - -", "failed 0 - -", "failed 0 - -"])
        #expect(round.balances[100] == 900 && round.seeds[user]?.nextNonce == 6)
        // A chain the money covers settles bet by bet, each on the balance the one before left.
        let losing = [try Self.clientSeed(winning: false, nonce: 6), try Self.clientSeed(winning: false, nonce: 7)]
        let paid = try round.play([
            Self.bet(user, wager: 100, clientSeed: losing[0], chain: "d"),
            Self.bet(user, wager: 200, clientSeed: losing[1], chain: "d"),
        ])
        #expect(paid.map(\.nonce) == [6, 7] && paid.map(\.balance) == ["8.00", "6.00"])
        #expect(Self.transfers(round).suffix(2) == ["bet_wager 100→1 100 800/-1", "bet_wager 100→1 200 600/-1"])
    }

    @Test func unbackedBetsDrawButMoveNoMoney() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 0)
        let results = try round.play([Self.bet(user, wager: 700, kind: .unbacked)])
        #expect(Self.transfers(round).isEmpty)
        #expect(Self.bets(round).first?.hasSuffix("1 5") == true)
        #expect(results.map(\.status) == [.settled] && results.map(\.balance) == [""])
        #expect(round.seeds[user]?.nextNonce == 6)
    }

    /// A credit bet draws on the player's credits of the game: none read means none to wager.
    @Test func creditBetsDrawOnTheGamesCredits() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        let refused = try round.play([Self.bet(user, wager: 100, kind: .credit)])
        #expect(refused.map(\.errorMessage) == ["not enough credits of game coin for this bet"])
        let credits = AccountKey(kind: .credit, userID: user, gameID: "coin", currency: "USD", economy: Self.real)
        round.playerAccounts[credits] = 300
        round.balances[300] = 150
        let clientSeed = try Self.clientSeed(winning: false, nonce: 5)
        let settled = try round.play([Self.bet(user, wager: 100, clientSeed: clientSeed, kind: .credit)])
        #expect(settled.map(\.balance) == ["0.50"])
        #expect(Self.transfers(round) == ["bet_wager 300→1 100 50/-1"])
        #expect(round.balances[100] == 1_000)
    }

    @Test func noncesAdvancePerUser() throws {
        let first = RaveID.random()
        let second = RaveID.random()
        var round = Self.round(users: [first, second], balance: 1_000)
        var nonces: [Int64] = []
        for user in [first, second, first, first, second] {
            nonces += try round.play([Self.bet(user, wager: 10)]).map(\.nonce)
        }
        #expect(nonces == [5, 5, 6, 7, 6])
        #expect(round.seeds[first]?.nextNonce == 8 && round.seeds[second]?.nextNonce == 7)
        #expect(round.seeds[first]?.startNonce == 5)
        #expect(Self.bets(round).map { $0.split(separator: " ")[2] } == ["1", "2", "1", "1", "2"])
    }

    /// Without its game's house account or its user's seed a unit cannot be played: it throws and leaves nothing.
    @Test func aUnitThatCannotBePlayedIsDeclinedAndLeavesNothing() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        round.houseAccounts = [:]
        #expect(throws: RoundPlay.Declined.self) {
            try round.play([Self.bet(user, wager: 10, kind: .unbacked), Self.bet(user, wager: 10)])
        }
        #expect(round.bets.count == 0 && round.transfers.count == 0)
        #expect(round.seeds[user]?.nextNonce == 5 && round.balances[100] == 1_000)
        #expect(throws: RoundPlay.Declined.self) {
            try round.play([Self.bet(RaveID.random(), wager: 10, kind: .unbacked)])
        }
        #expect(round.bets.count == 0)
    }

    @Test func replaysAnswerTheStoredResultOrRefuseADifferentBet() throws {
        let user = RaveID.random()
        var round = Self.round(users: [user], balance: 1_000)
        let bet = Self.bet(user, wager: 10)
        let answer = try #require(try round.play([bet]).first)
        let stored: RoundPlay.StoredBet = (bet.requestHash, round.bets.result(at: 0))
        #expect(try RoundPlay.replay(bet, stored: stored) == answer)
        var different = Self.bet(user, wager: 20)
        different.betID = bet.betID
        different.betIDText = bet.betIDText
        #expect(throws: WalletError(.conflictingReplay, "bet id \(bet.betIDText) was already used for a different bet"))
        {
            try RoundPlay.replay(different, stored: stored)
        }
        let missing = try RoundPlay.replay(Self.bet(user, wager: 10), stored: nil)
        #expect(missing.status == .failed && missing.errorCode == StatusCode.aborted.rawValue)
        #expect(missing.errorMessage == "the chain's bet ids were partly used before; nothing was settled")
    }

    /// A unit's checkpoint keeps its first seed and balance inline and any further ones after it, in order.
    @Test func inlineFirstListsKeepEveryElementInOrder() {
        var list = RoundPlay.InlineFirst<Int>()
        #expect(!list.contains { _ in true })
        for value in [3, 1, 4] { list.append(value) }
        var seen: [Int] = []
        list.forEach { seen.append($0) }
        #expect(seen == [3, 1, 4])
        #expect(list.contains { $0 == 4 } && list.contains { $0 == 3 } && !list.contains { $0 == 2 })
    }
}
