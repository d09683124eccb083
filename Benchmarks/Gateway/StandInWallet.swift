import RaveMessages
import RaveRPC
import Synchronization

/// `rave.wallet.v1.Wallet/PlaceBet` and `/PlaceBets` without a ledger: what the gateway's batch tests and its
/// benchmark need from a wallet, so they measure and check the gateway's part alone.
///
/// A bet with the wager "0" fails with FAILED_PRECONDITION ("insufficient funds"), any other settles paying its
/// wager back. Counts the calls it serves, so tests can see how bets reached it.
final class StandInWallet: RPCService {
    static let serviceName = "rave.wallet.v1.Wallet"
    /// The wager that makes a bet fail, as a bet over the balance would.
    static let failingWager = "0"

    let placeBetCalls = Atomic<Int>(0)
    let placeBetsCalls = Atomic<Int>(0)
    /// The number of bets of every PlaceBets call, in arrival order.
    let placeBetsSizes = Mutex<[Int]>([])

    init() {}

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/PlaceBet") { request, context in
                let caller = try context.requireUser()
                self.placeBetCalls.wrappingAdd(1, ordering: .relaxed)
                let bet = try WalletV1.PlaceBetRequest(protobufBytes: request).bet ?? WalletV1.Bet()
                let result = Self.settle(bet, userID: caller.userID)
                if result.status == .failed {
                    throw RPCError(StatusCode(rawValue: result.errorCode), result.errorMessage)
                }
                return WalletV1.PlaceBetResponse(result: result).protobufBytes()
            },
            RPCMethod(name: "\(Self.serviceName)/PlaceBets") { request, context in
                let caller = try context.requireUser()
                self.placeBetsCalls.wrappingAdd(1, ordering: .relaxed)
                let bets = try WalletV1.PlaceBetsRequest(protobufBytes: request).bets
                self.placeBetsSizes.withLock { $0.append(bets.count) }
                guard Set(bets.map(\.betId)).count == bets.count else {
                    throw RPCError.invalidArgument("bet ids in one batch must be distinct")
                }
                let results = bets.map { Self.settle($0, userID: caller.userID) }
                return WalletV1.PlaceBetsResponse(results: results).protobufBytes()
            },
        ]
    }

    /// The result of one bet; the balance names the user, so a test sees whose bet it was.
    static func settle(_ bet: WalletV1.Bet, userID: String) -> WalletV1.BetResult {
        var result = WalletV1.BetResult()
        result.betId = bet.betId
        result.currency = bet.currency
        result.wager = bet.wager
        result.clientSeed = bet.clientSeed
        guard bet.wager != failingWager else {
            result.status = .failed
            result.errorCode = StatusCode.failedPrecondition.rawValue
            result.errorMessage = "insufficient funds for bet \(bet.betId)"
            return result
        }
        result.status = .settled
        result.payout = bet.wager
        result.balance = "balance of \(userID)"
        return result
    }
}
