import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.merge.v1.MergeParticipant: moves every balance of the source user to the target by ledger transfers.
struct WalletMergeService: MergeV1.MergeParticipantHandler {
    let dependencies: WalletDependencies

    init(dependencies: WalletDependencies) {
        self.dependencies = dependencies
        // Merges another wallet process applied: move what calls here wrote under the source meanwhile.
        let dependencies = self.dependencies
        dependencies.merges.onSweep { source, target in
            try await Self.move(source, into: target, mergeID: nil, dependencies: dependencies)
        }
    }

    static let recordMerge = PostgresStatement(
        name: "wallet_record_merge",
        sql: """
            INSERT INTO merges (merge_id, source_user_id, target_user_id) VALUES ($1, $2, $3)
            ON CONFLICT (merge_id) DO NOTHING RETURNING merge_id
            """)
    static let sourceAccounts = PostgresStatement(
        name: "wallet_merge_source_accounts",
        sql: """
            SELECT account_id, kind, game_id, currency, economy, balance FROM accounts
            WHERE user_id = $1 AND kind IN ('user', 'credit') ORDER BY account_id FOR UPDATE
            """)
    /// The source's bets become the target's, so a bet id replayed under either id returns its stored result
    /// (ids the target used too stay with the source: a bet id names one bet per player).
    static let moveBets = PostgresStatement(
        name: "wallet_merge_bets",
        sql: """
            UPDATE bets b SET user_id = $2 WHERE b.user_id = $1
                AND NOT EXISTS (SELECT 1 FROM bets t WHERE t.user_id = $2 AND t.bet_id = b.bet_id)
            """)
    /// The source's seeds go with its bets; its active seed is revealed (it can never draw again), so every bet
    /// it drew for can be verified.
    static let moveSeeds = PostgresStatement(
        name: "wallet_merge_seeds",
        sql: "UPDATE server_seeds SET user_id = $2, revealed_at = COALESCE(revealed_at, now()) WHERE user_id = $1")
    /// The merge a sweep belongs to, for the transfers' reference.
    static let mergeOfSource = PostgresStatement(
        name: "wallet_merge_of_source", sql: "SELECT merge_id FROM merged_users WHERE source_id = $1")

    /// Moves the source's money, bets and seeds to the target; repeating a merge id changes nothing.
    ///
    /// From the start of the call the source resolves to the target in this process; the money moves once every
    /// call that resolved it earlier has finished (`MergedUsers.redirect`), so no bet or deposit is left behind.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        let source = try WalletDependencies.userID(request.sourceUserId, field: "source_user_id")
        let target = try WalletDependencies.userID(request.targetUserId, field: "target_user_id")
        guard source != target, !request.mergeId.isEmpty else {
            throw WalletError.invalidArgument("a merge needs a merge_id and two different users")
        }
        await dependencies.merges.redirect(source: source, target: target)
        let applied = try await Self.move(source, into: target, mergeID: request.mergeId, dependencies: dependencies)
        return MergeV1.MergeUsersResponse(alreadyApplied: !applied)
    }

    /// Moves whatever the source holds to the target; with a `mergeID`, records the merge first (false when it was
    /// applied before: nothing moves then), without one (a sweep) moves what is left under the merge recorded.
    @discardableResult
    static func move(
        _ source: RaveID, into target: RaveID, mergeID: String?, dependencies: WalletDependencies
    ) async throws -> Bool {
        let ledger = dependencies.ledger
        // Target accounts are created first, outside the transaction, so their cached ids are committed.
        for row in try await dependencies.pool.execute(Self.sourceAccounts.unlocked, [source]) {
            _ = try await ledger.ensureAccount(try Self.key(row, user: target), on: dependencies.pool)
        }
        return try await dependencies.pool.transaction(retryOnSerializationFailure: true) { transaction in
            var target = target
            let reference: String
            if let mergeID {
                guard !(try await transaction.execute(Self.recordMerge, [mergeID, source, target])).isEmpty else {
                    return false  // Already applied.
                }
                target = try await dependencies.merges.record(
                    mergeID: mergeID, source: source, target: target, in: transaction)
                reference = mergeID
            } else {
                reference =
                    try await transaction.execute(Self.mergeOfSource, [source]).first?.decode(String.self, at: 0) ?? ""
            }
            for row in try await transaction.execute(Self.sourceAccounts, [source]) {
                let balance = try row.decode(Int64.self, at: 5)
                guard balance > 0 else { continue }
                let targetAccount = try await ledger.ensureAccount(try Self.key(row, user: target), on: transaction)
                try await ledger.transfer(
                    code: "merge", from: try row.decode(Int64.self, at: 0), to: targetAccount, amount: balance,
                    userID: target, betID: nil, reference: reference, on: transaction)
            }
            try await transaction.execute(Self.moveBets, [source, target])
            try await transaction.execute(Self.moveSeeds, [source, target])
            return true
        }
    }

    private static func key(_ row: PostgresRow, user: RaveID) throws -> AccountKey {
        AccountKey(
            kind: try row.decode(String.self, at: 1) == "credit" ? .credit : .user, userID: user,
            gameID: try row.decode(String.self, at: 2), currency: try row.decode(String.self, at: 3),
            economy: try row.decode(Int32.self, at: 4))
    }
}

extension PostgresStatement {
    /// The same query without its trailing FOR UPDATE, for a lock-free read ahead of the transaction.
    fileprivate var unlocked: PostgresStatement {
        PostgresStatement(name: name + "_unlocked", sql: String(sql.dropLast(" FOR UPDATE".count)))
    }
}
