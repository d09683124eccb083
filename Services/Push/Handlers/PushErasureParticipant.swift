import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.erasure.v1.ErasureParticipant`: identity's deletion saga erases a deleted account's devices and inbox.
struct PushErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: PushDependencies
    let store = ErasureStore()

    init(dependencies: PushDependencies) {
        self.dependencies = dependencies
        // Erasures another push process applied: erase what calls here wrote meanwhile.
        let pool = dependencies.pool
        dependencies.merges.onErasure { erased in
            try await pool.transaction { transaction in
                _ = try await erased.apply(ErasureStore.steps, in: transaction)
            }
        }
    }

    /// Erases the user's and its merged ids' device tokens, deliveries and inbox (docs/push.md, "Deleting an
    /// account"); repeating an erasure id changes nothing.
    ///
    /// From the start of the call sends to the user are not delivered and calls naming it are refused in this
    /// process; the rows go once every call that named it earlier has finished.
    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let merges = dependencies.merges
        let store = self.store
        return try await UserErasure.answer(request, refusingIn: merges) { erasure in
            try await dependencies.pool.transaction { transaction in
                try await store.erase(erasure, merges: merges, in: transaction)
            }
        }
    }
}
