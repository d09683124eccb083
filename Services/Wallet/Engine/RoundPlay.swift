import RaveMessages
import RavePostgres
import RaveRPC

/// Bet settlement itself, without I/O: how a unit (one bet, or an all-or-nothing chain) plays against its users'
/// server seeds and player balances, which rows that writes and what each bet answers.
///
/// Both engines decide through it. `BulkRound` fills it with a whole round's locked seeds and balances and plays
/// every unit of the round into one set of rows; `BetEngine` fills it with one unit's, read under the same row locks,
/// and writes the rows statement by statement. Either way the rows go to a database whose constraints
/// (`player_balance_not_negative`, the reference triggers, `bets_pkey`) keep the last word.
///
/// The rules: a bet takes its user's next nonce and draws its outcome from the seed; a bet that moves money transfers
/// its wager player → house and its payout (if any) house → player, each transfer carrying the player's balance after;
/// a unit whose player cannot pay a wager is undone whole and each of its bets is written as failed, with no draw; a
/// unit that cannot be played here (a missing house account or seed) is declined and leaves nothing behind.
struct RoundPlay {
    /// A user's active server seed, locked for the round.
    struct Seed: Sendable {
        var id: Int64
        var bytes: [UInt8]
        var hash: String
        /// The nonce the next bet takes.
        var nextNonce: Int64
        /// The next nonce as read: the seed needs writing back when the two differ.
        var startNonce: Int64

        init(id: Int64, bytes: [UInt8], hash: String, nextNonce: Int64) {
            self.id = id
            self.bytes = bytes
            self.hash = hash
            self.nextNonce = nextNonce
            startNonce = nextNonce
        }
    }

    /// The unit cannot be played against what was read (no house account, no seed); nothing of it was written.
    struct Declined: Error, Sendable {
        var reason: String
    }

    /// A bet as stored: the request hash it was placed with and its encoded result.
    typealias StoredBet = (hash: [UInt8], result: [UInt8])

    /// Each user's active seed.
    var seeds: [RaveID: Seed] = [:]
    /// Each player account's balance, by account id; moved as units play.
    var balances: [Int64: Int64] = [:]
    /// The ids of the player accounts read; a bet whose account is missing has no money to wager.
    var playerAccounts: [AccountKey: Int64] = [:]
    var houseAccounts: [AccountKey: Int64] = [:]
    /// The transfers to write, in the order the balances moved.
    var transfers = RoundStore.Transfers()
    /// The bet rows to write, one per bet played, in play order.
    var bets = RoundStore.Bets()

    /// Plays `unit` and appends its rows; returns one result per bet.
    ///
    /// A unit short of money leaves only its failed bet rows behind and answers each bet as failed with the unit's
    /// reason; any other error (a `Declined`, a payout too large) leaves nothing behind and is thrown.
    mutating func play(_ unit: [PreparedBet]) throws -> [WalletV1.BetResult] {
        let before = checkpoint(unit)
        do {
            var results: [WalletV1.BetResult] = []
            for bet in unit { results.append(try playOne(bet)) }
            return results
        } catch let error as WalletError where error.kind == .insufficientFunds {
            restore(before)
            var results: [WalletV1.BetResult] = []
            for bet in unit {
                var result = Self.baseResult(bet)
                result.status = .failed
                result.errorCode = error.code.rawValue
                result.errorMessage = unit.count > 1 ? "chain \(bet.chainID) failed: \(error.message)" : error.message
                bets.append(bet, status: "failed", payout: 0, seedID: nil, nonce: nil, result: result.protobufBytes())
                results.append(result)
            }
            return results
        } catch {
            restore(before)
            throw error
        }
    }

    private mutating func playOne(_ bet: PreparedBet) throws -> WalletV1.BetResult {
        guard var seed = seeds[bet.userID] else { throw Declined(reason: "no server seed was read for the bet's user") }
        let nonce = seed.nextNonce
        seed.nextNonce += 1
        seeds[bet.userID] = seed
        var random = FairRandom(serverSeed: seed.bytes, clientSeed: bet.clientSeed, nonce: nonce)
        let play = try bet.math.play(wager: bet.wager, lines: bet.lines, random: &random)
        var result = Self.baseResult(bet)
        result.status = .settled
        result.outcome = GameMath.outcome(play, currency: bet.currency)
        result.payout = MoneyFormat.format(play.payout, currency: bet.currency)
        result.serverSeedHash = seed.hash
        result.nonce = nonce
        if bet.kind.movesMoney {
            guard let player = playerAccounts[bet.playerAccount] else { throw Self.noFunds(bet) }
            guard let house = houseAccounts[bet.houseAccount] else {
                throw Declined(reason: "the house account of \(bet.gameID) is missing")
            }
            guard let balance = balances[player], balance >= bet.wager else { throw Self.noFunds(bet) }
            var after = balance - bet.wager
            transfers.append(
                code: "bet_wager", from: player, to: house, amount: bet.wager, userID: bet.userID, betID: bet.betID,
                fromBalanceAfter: after, toBalanceAfter: nil)
            if play.payout > 0 {
                after += play.payout
                transfers.append(
                    code: "bet_payout", from: house, to: player, amount: play.payout, userID: bet.userID,
                    betID: bet.betID, fromBalanceAfter: nil, toBalanceAfter: after)
            }
            balances[player] = after
            result.balance = MoneyFormat.format(after, currency: bet.currency)
        }
        bets.append(
            bet, status: "settled", payout: play.payout, seedID: seed.id, nonce: nonce, result: result.protobufBytes())
        return result
    }

    /// The answer to `bet` when an id of its unit was used before: what is stored, when it asks for the same bet.
    ///
    /// A bet of such a unit that was never stored (part of a chain replayed while another part was never stored: the
    /// first attempt failed as a whole elsewhere) is answered as not settled rather than settling half a chain; a
    /// stored bet placed with different fields is a conflicting replay.
    static func replay(_ bet: PreparedBet, stored: StoredBet?) throws -> WalletV1.BetResult {
        guard let stored else {
            var result = baseResult(bet)
            result.status = .failed
            result.errorCode = StatusCode.aborted.rawValue
            result.errorMessage = "the chain's bet ids were partly used before; nothing was settled"
            return result
        }
        guard stored.hash == bet.requestHash else {
            throw WalletError(.conflictingReplay, "bet id \(bet.betIDText) was already used for a different bet")
        }
        return try stored.result.withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) }
    }

    static func noFunds(_ bet: PreparedBet) -> WalletError {
        bet.kind == .credit
            ? WalletError(.insufficientFunds, "not enough credits of game \(bet.creditGameID) for this bet")
            : WalletError(.insufficientFunds, "insufficient funds in \(bet.currency.code)")
    }

    /// The fields every answer to `bet` carries, whatever became of it.
    static func baseResult(_ bet: PreparedBet) -> WalletV1.BetResult {
        var result = WalletV1.BetResult()
        result.betId = bet.betIDText
        result.wager = MoneyFormat.format(bet.wager, currency: bet.currency)
        result.currency = bet.currency.code
        result.economy = bet.economy
        result.clientSeed = bet.clientSeed
        return result
    }

    // MARK: - Undoing a unit

    /// What a unit may change, so a failing unit is undone without copying the whole round.
    ///
    /// A unit is one user's bet or short chain, so it holds one seed and almost always one balance: the first of each
    /// is kept inline (no allocation per unit), further ones in small arrays searched linearly.
    private struct Checkpoint {
        var transfers: Int
        var bets: Int
        var seeds = InlineFirst<(user: RaveID, seed: Seed)>()
        var balances = InlineFirst<(account: Int64, balance: Int64)>()
    }

    private func checkpoint(_ unit: [PreparedBet]) -> Checkpoint {
        var checkpoint = Checkpoint(transfers: transfers.count, bets: bets.count)
        for bet in unit {
            if !checkpoint.seeds.contains(where: { $0.user == bet.userID }), let seed = seeds[bet.userID] {
                checkpoint.seeds.append((bet.userID, seed))
            }
            if let account = playerAccounts[bet.playerAccount],
                !checkpoint.balances.contains(where: { $0.account == account }), let balance = balances[account]
            {
                checkpoint.balances.append((account, balance))
            }
        }
        return checkpoint
    }

    private mutating func restore(_ checkpoint: Checkpoint) {
        transfers.removeLast(transfers.count - checkpoint.transfers)
        bets.removeLast(bets.count - checkpoint.bets)
        checkpoint.seeds.forEach { seeds[$0.user] = $0.seed }
        checkpoint.balances.forEach { balances[$0.account] = $0.balance }
    }

    /// A short list whose first element is stored inline: appending one allocates nothing.
    struct InlineFirst<Element> {
        private var first: Element?
        private var rest: [Element] = []

        mutating func append(_ element: Element) {
            if first == nil { first = element } else { rest.append(element) }
        }

        func contains(where matches: (Element) -> Bool) -> Bool {
            guard let first else { return false }
            return matches(first) || rest.contains(where: matches)
        }

        func forEach(_ body: (Element) -> Void) {
            guard let first else { return }
            body(first)
            rest.forEach(body)
        }
    }
}
