import RaveMessages
import RavePostgres
import RaveRPC

/// Runs bets inside a transaction the caller owns, each unit (one bet, or a linked chain) under a savepoint so a
/// failing unit is rolled back alone and the transaction carries on with the others.
///
/// The unit-by-unit path: a statement per row, for the rounds the bulk path does not take. It locks and reads what
/// a unit plays against, lets `RoundPlay` decide (the rules `BulkRound` applies too), and writes the rows it decided.
struct BetEngine: Sendable {
    let ledger: LedgerStore
    let bets: BetStore

    /// Settles `unit` (one bet, or the bets of one chain, all-or-nothing) and returns one result per bet.
    ///
    /// A bet that fails on money is stored as failed, so its id can never succeed later; in a chain every bet is
    /// stored as failed when one fails. A unit holding an id used before answers from what is stored, whatever the
    /// balances are now.
    func settle(_ unit: [PreparedBet], on transaction: PostgresTransaction) async throws -> [WalletV1.BetResult] {
        try await transaction.query("SAVEPOINT bet_unit")
        do {
            var round = try await lockedRound(of: unit, on: transaction)
            let results: [WalletV1.BetResult]
            do {
                results = try round.play(unit)
            } catch let declined as RoundPlay.Declined {
                throw PostgresError(.client, declined.reason)
            }
            if try await write(unit, round, on: transaction) {
                try await transaction.query("RELEASE SAVEPOINT bet_unit")
                return results
            }
            // Some id of the unit was used before: undo this attempt and answer from what is stored.
            try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
            var replayed: [WalletV1.BetResult] = []
            for bet in unit {
                replayed.append(try RoundPlay.replay(bet, stored: try await bets.stored(bet, on: transaction)))
            }
            try await transaction.query("RELEASE SAVEPOINT bet_unit")
            return replayed
        } catch {
            // Nothing of this unit may remain; the transaction goes on with the other units.
            try await transaction.query("ROLLBACK TO SAVEPOINT bet_unit")
            throw error
        }
    }

    /// Locks and reads what `unit` plays against: its user's active seed (created on first use; the row lock orders
    /// concurrent bets of one user) and the balance of each player account it draws on (locked as the transfer's own
    /// update would lock it), with the house accounts' ids.
    private func lockedRound(of unit: [PreparedBet], on transaction: PostgresTransaction) async throws -> RoundPlay {
        var round = RoundPlay()
        for bet in unit {
            if round.seeds[bet.userID] == nil {
                round.seeds[bet.userID] = try await bets.lockSeed(user: bet.userID, on: transaction)
            }
            guard bet.kind.movesMoney else { continue }
            if round.playerAccounts[bet.playerAccount] == nil,
                let account = try await ledger.findAccount(bet.playerAccount, on: transaction)
            {
                round.playerAccounts[bet.playerAccount] = account
                round.balances[account] = try await ledger.lockBalance(of: account, on: transaction)
            }
            if round.houseAccounts[bet.houseAccount] == nil,
                let house = try await ledger.findAccount(bet.houseAccount, on: transaction)
            {
                round.houseAccounts[bet.houseAccount] = house
            }
        }
        return round
    }

    /// Writes the rows `round` decided for `unit`: the seeds' nonces, the transfers in order, the bet rows; false
    /// (and the caller rolls back) when one of the unit's bet ids was stored before.
    private func write(
        _ unit: [PreparedBet], _ round: RoundPlay, on transaction: PostgresTransaction
    ) async throws
        -> Bool
    {
        for seed in round.seeds.values where seed.nextNonce != seed.startNonce {
            try await bets.advanceNonce(seedID: seed.id, to: seed.nextNonce, on: transaction)
        }
        let transfers = round.transfers
        for row in 0..<transfers.count {
            let after = try await ledger.transfer(
                code: transfers.codes[row], from: transfers.fromAccounts[row], to: transfers.toAccounts[row],
                amount: transfers.amounts[row], userID: transfers.userIDs[row], betID: transfers.betIDs[row],
                on: transaction)
            // The player rows were locked when read, so the ledger reaches exactly the balances the unit played with.
            guard after.debitBalance ?? -1 == transfers.fromBalancesAfter[row],
                after.creditBalance ?? -1 == transfers.toBalancesAfter[row]
            else {
                throw PostgresError(
                    .client, "a \(transfers.codes[row]) transfer reached a balance other than the locked one predicted")
            }
        }
        let rows = round.bets
        precondition(rows.count == unit.count, "a unit played writes one bet row per bet")
        for (row, bet) in unit.enumerated() {
            let inserted = try await bets.insert(
                bet, status: rows.statuses[row], payout: rows.payouts[row], seedID: rows.seedID(at: row),
                nonce: rows.nonce(at: row), result: rows.result(at: row), on: transaction)
            guard inserted else { return false }
        }
        return true
    }
}
