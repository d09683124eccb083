import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.merge.v1.MergeParticipant: moves every balance of the source user to the target by ledger transfers.
struct WalletMergeService: MergeV1.MergeParticipantHandler {
    let dependencies: WalletDependencies

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

    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        let source = try WalletDependencies.userID(request.sourceUserId, field: "source_user_id")
        let target = try WalletDependencies.userID(request.targetUserId, field: "target_user_id")
        guard source != target, !request.mergeId.isEmpty else {
            throw WalletError.invalidArgument("a merge needs a merge_id and two different users")
        }
        let ledger = dependencies.ledger
        // Target accounts are created first, outside the transaction, so their cached ids are committed.
        for row in try await dependencies.pool.execute(Self.sourceAccounts.unlocked, [source]) {
            _ = try await ledger.ensureAccount(try Self.key(row, user: target), on: dependencies.pool)
        }
        try await dependencies.pool.transaction(retryOnSerializationFailure: true) { transaction in
            guard !(try await transaction.execute(Self.recordMerge, [request.mergeId, source, target])).isEmpty else {
                return  // Already applied.
            }
            for row in try await transaction.execute(Self.sourceAccounts, [source]) {
                let balance = try row.decode(Int64.self, at: 5)
                guard balance > 0 else { continue }
                let targetAccount = try await ledger.ensureAccount(try Self.key(row, user: target), on: transaction)
                try await ledger.transfer(
                    code: "merge", from: try row.decode(Int64.self, at: 0), to: targetAccount, amount: balance,
                    userID: target, betID: nil, reference: request.mergeId, on: transaction)
            }
        }
        return MergeV1.MergeUsersResponse()
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
