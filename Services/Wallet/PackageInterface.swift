import RaveMessages
import RaveServices

// What the package's other modules (the wallet's benchmark, Benchmarks/Wallet) call in-process: the handlers over a
// set of dependencies and the committer's counters. `package` access: nothing outside this package sees it.
extension WalletDependencies {
    /// rave.wallet.v1.Wallet over these dependencies.
    package var walletHandler: any WalletV1.WalletHandler { PlayerHandlers(dependencies: self) }

    /// rave.wallet.v1.WalletAdmin over these dependencies.
    package var adminHandler: any WalletV1.WalletAdminHandler { AdminHandlers(dependencies: self) }

    /// The most bets one PlaceBets call may carry.
    package static var maximumBatchSize: Int { PlayerHandlers.maximumBatchSize }

    /// Group-commit rounds run so far.
    package var roundsRun: Int { committer.roundsRun.load(ordering: .relaxed) }

    /// Rounds that fell back to settling bet by bet, so far.
    package var unitByUnitRounds: Int { committer.unitByUnitRounds.load(ordering: .relaxed) }

    /// The committer's lanes.
    package var laneCount: Int { committer.laneCount }
}
