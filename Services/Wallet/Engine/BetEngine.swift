import RaveMessages
import RavePostgres
import RaveRPC

/// Runs bets inside a transaction the caller owns, each unit (one bet, or a linked chain) under a savepoint so a
/// failing unit is rolled back alone and the transaction carries on with the others.
struct BetEngine: Sendable {
    let ledger: LedgerStore
    let bets: BetStore

    /// Settles `unit` (one bet, or the bets of one chain, all-or-nothing) and returns one result per bet.
    ///
    /// A bet that fails on money is stored as failed, so its id can never succeed later; in a chain every bet is
    /// stored as failed when one fails. A replayed id returns what was stored, whatever the balances are now.
    func settle(_ unit: [PreparedBet], on transaction: PostgresTransaction) async throws -> [WalletV1.BetResult] {
        try await transaction.query("SAVEPOINT bet_unit")
        do {
            var results: [WalletV1.BetResult] = []
            for bet in unit {
                guard let result = try await settleOne(bet, on: transaction) else {
                    // Some id of the unit was used before: undo this attempt and answer from what is stored.
                    try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
                    results = try await replay(unit, on: transaction)
                    break
                }
                results.append(result)
            }
            try await transaction.query("RELEASE SAVEPOINT bet_unit")
            return results
        } catch let error as WalletError where error.kind == .insufficientFunds {
            try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
            do {
                let results = try await recordFailure(unit, error: error, on: transaction)
                try await transaction.query("RELEASE SAVEPOINT bet_unit")
                return results
            } catch {
                try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
                throw error
            }
        } catch {
            // Nothing of this unit may remain; the transaction goes on with the other units.
            try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
            throw error
        }
    }

    /// Plays and books one bet; nil when its id is already taken.
    private func settleOne(_ bet: PreparedBet, on transaction: PostgresTransaction) async throws -> WalletV1.BetResult?
    {
        let draw = try await bets.reserveDraw(user: bet.userID, on: transaction)
        var random = FairRandom(serverSeed: draw.seed, clientSeed: bet.clientSeed, nonce: draw.nonce)
        let play = try bet.math.play(wager: bet.wager, lines: bet.lines, random: &random)
        var result = Self.baseResult(bet)
        result.status = .settled
        result.outcome = GameMath.outcome(play, currency: bet.currency)
        result.payout = MoneyFormat.format(play.payout, currency: bet.currency)
        result.serverSeedHash = draw.seedHash
        result.nonce = draw.nonce
        if bet.kind.movesMoney {
            guard let player = try await ledger.findAccount(bet.playerAccount, on: transaction) else {
                throw Self.noFunds(bet)
            }
            let house = try await ledger.findAccount(bet.houseAccount, on: transaction)
            guard let house else { throw PostgresError(.client, "the house account of \(bet.gameID) is missing") }
            var balance: Int64?
            do {
                balance = try await ledger.transfer(
                    code: "bet_wager", from: player, to: house, amount: bet.wager, userID: bet.userID,
                    betID: bet.betID, on: transaction
                ).debitBalance
            } catch let error as WalletError where error.kind == .insufficientFunds {
                throw Self.noFunds(bet)
            }
            if play.payout > 0 {
                balance = try await ledger.transfer(
                    code: "bet_payout", from: house, to: player, amount: play.payout, userID: bet.userID,
                    betID: bet.betID, on: transaction
                ).creditBalance
            }
            result.balance = balance.map { MoneyFormat.format($0, currency: bet.currency) } ?? ""
        }
        let inserted = try await bets.insert(
            bet, status: "settled", payout: play.payout, draw: draw, result: result, on: transaction)
        return inserted ? result : nil
    }

    private func recordFailure(
        _ unit: [PreparedBet], error: WalletError, on transaction: PostgresTransaction
    ) async throws -> [WalletV1.BetResult] {
        var results: [WalletV1.BetResult] = []
        for bet in unit {
            var result = Self.baseResult(bet)
            result.status = .failed
            result.errorCode = error.statusCode.rawValue
            result.errorMessage = unit.count > 1 ? "chain \(bet.chainID) failed: \(error.message)" : error.message
            if try await bets.insert(bet, status: "failed", payout: 0, draw: nil, result: result, on: transaction) {
                results.append(result)
            } else {
                results.append(try await bets.storedResult(of: bet, on: transaction))
            }
        }
        return results
    }

    private func replay(_ unit: [PreparedBet], on transaction: PostgresTransaction) async throws -> [WalletV1.BetResult]
    {
        var results: [WalletV1.BetResult] = []
        for bet in unit {
            do {
                results.append(try await bets.storedResult(of: bet, on: transaction))
            } catch let error as PostgresError where error.code == .client {
                // Part of a chain replayed while another part was never stored: the first attempt failed as a
                // whole elsewhere, so this id is new; report it as not settled rather than settle half a chain.
                var result = Self.baseResult(bet)
                result.status = .failed
                result.errorCode = StatusCode.aborted.rawValue
                result.errorMessage = "the chain's bet ids were partly used before; nothing was settled"
                results.append(result)
            }
        }
        return results
    }

    static func noFunds(_ bet: PreparedBet) -> WalletError {
        bet.kind == .credit
            ? WalletError(.insufficientFunds, "not enough credits of game \(bet.creditGameID) for this bet")
            : WalletError(.insufficientFunds, "insufficient funds in \(bet.currency.code)")
    }

    static func baseResult(_ bet: PreparedBet) -> WalletV1.BetResult {
        var result = WalletV1.BetResult()
        result.betId = bet.betIDText
        result.wager = MoneyFormat.format(bet.wager, currency: bet.currency)
        result.currency = bet.currency.code
        result.economy = bet.economy
        result.clientSeed = bet.clientSeed
        return result
    }
}
