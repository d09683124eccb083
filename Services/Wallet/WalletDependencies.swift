import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry

/// Everything the handlers share: the pool, the stores and the group committer.
package struct WalletDependencies: Sendable {
    package let pool: PostgresPool
    let catalog: CatalogStore
    let ledger: LedgerStore
    let bets: BetStore
    let queries: QueryStore
    let operations: OperationStore
    let mergeStore: MergeStore
    let committer: GroupCommitter
    /// Merged-away players and their targets: every caller and player id is resolved through it.
    let merges: MergedUsers
    /// Identity's answer to "does this user exist?", asked before an operator moves money.
    let users: any UserDirectory
    /// Which applications an operator may reach, and what needs an operator of every publisher (docs/wallet.md,
    /// "Operator scope").
    let adminScope: AdminScope

    /// `merges` defaults to one that listens to nothing (tools and tests), which resolves every id from the
    /// database.
    package init(
        pool: PostgresPool, users: any UserDirectory, laneCount: Int = GroupCommitter.defaultLaneCount,
        merges: MergedUsers? = nil,
        adminScope: AdminScope = AdminScope(identity: nil, setting: "RAVE_WALLET_IDENTITY_ADDRESS")
    ) {
        self.pool = pool
        self.adminScope = adminScope
        self.users = users
        self.merges = merges ?? MergedUsers(pool: pool, loop: nil, logger: Logger(label: "wallet"))
        catalog = CatalogStore()
        ledger = LedgerStore()
        bets = BetStore()
        queries = QueryStore(catalog: catalog)
        operations = OperationStore()
        mergeStore = MergeStore()
        committer = GroupCommitter(
            pool: pool, engine: BetEngine(ledger: ledger, bets: bets), laneCount: laneCount)
    }

    /// The services the wallet serves: player methods, operator methods, the merge participant and the erasure
    /// participant (the calls of the first two count for merges' drains; the participants' must not).
    var rpcServices: [any RPCService] {
        [
            merges.track(PlayerHandlers(dependencies: self)), merges.track(AdminHandlers(dependencies: self)),
            WalletMergeParticipant(dependencies: self), WalletErasureParticipant(dependencies: self),
            WalletExportParticipant(dependencies: self),
        ]
    }

    /// The caller's player: the account its token's user is now (a merged-away id resolves to its target).
    func playerID(of caller: Caller) async throws -> RaveID {
        try await merges.resolve(Self.userID(caller.userID, field: "caller user id"))
    }

    /// A player named in a request (`field`), resolved like the caller.
    func playerID(_ text: String, field: String) async throws -> RaveID {
        try await merges.resolve(Self.userID(text, field: field))
    }

    /// An id on the wire: 32 lowercase hex digits, as every service reads them; another spelling is refused.
    static func userID(_ text: String, field: String) throws(WalletError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }
}
