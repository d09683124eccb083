import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.merge.v1.MergeParticipant: moves every balance of the source user to the target by ledger transfers.
struct WalletMergeParticipant: MergeV1.MergeParticipantHandler {
    let dependencies: WalletDependencies

    init(dependencies: WalletDependencies) {
        self.dependencies = dependencies
        // Merges another wallet process applied: move what calls here wrote under the source meanwhile.
        let dependencies = self.dependencies
        dependencies.merges.onSweep { source, target in
            try await Self.move(source, into: target, mergeID: nil, dependencies: dependencies)
        }
    }

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
        let store = dependencies.mergeStore
        // Target accounts are created first, outside the transaction, so their cached ids are committed.
        for account in try await store.accounts(of: source, target: target, locked: false, on: dependencies.pool) {
            _ = try await ledger.ensureAccount(account.targetKey, on: dependencies.pool)
        }
        return try await dependencies.pool.transaction(retryOnSerializationFailure: true) { transaction in
            var target = target
            let reference: String
            if let mergeID {
                guard try await store.record(mergeID: mergeID, source: source, target: target, in: transaction) else {
                    return false  // Already applied.
                }
                target = try await dependencies.merges.record(
                    mergeID: mergeID, source: source, target: target, in: transaction)
                reference = mergeID
            } else {
                reference = try await store.mergeID(ofSource: source, in: transaction)
            }
            for account in try await store.accounts(of: source, target: target, locked: true, on: transaction)
            where account.balance > 0 {
                let targetAccount = try await ledger.ensureAccount(account.targetKey, on: transaction)
                try await ledger.transfer(
                    code: "merge", from: account.accountID, to: targetAccount, amount: account.balance,
                    userID: target, betID: nil, reference: reference, on: transaction)
            }
            try await store.moveBetsAndSeeds(of: source, to: target, in: transaction)
            return true
        }
    }
}
