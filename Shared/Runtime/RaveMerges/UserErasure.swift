import RaveMessages
import RavePostgres
import RaveRPC

/// One account deletion as identity's saga asks it of a data service (`rave.erasure.v1.ErasureParticipant`), its
/// fields checked.
public struct UserErasure: Sendable, Hashable {
    /// Unique per deletion: the only thing `applied_erasures` keeps.
    public var erasureID: String
    /// The deleted user.
    public var userID: RaveID
    /// The users merged into `userID` that the request names (the service's `merged_users` may know more).
    public var mergedIDs: [RaveID]
    /// What replaces the user's id in the rows a service keeps for other users' sake.
    public var tombstoneID: RaveID

    /// Merged ids one request may name.
    public static let maximumMergedIDs = 1000

    /// Checks the request's fields; a problem is `ErasureError.invalidArgument` in our words.
    public init(
        erasureID: String, userID: String, mergedUserIDs: [String], tombstoneID: String
    ) throws(ErasureError) {
        guard (1...128).contains(erasureID.utf8.count) else {
            throw .invalidArgument("erasure_id must be 1…128 bytes, got \(erasureID.utf8.count)")
        }
        guard mergedUserIDs.count <= Self.maximumMergedIDs else {
            throw .invalidArgument(
                "merged_user_ids may hold at most \(Self.maximumMergedIDs) ids, got \(mergedUserIDs.count)")
        }
        self.erasureID = erasureID
        self.userID = try Self.id(userID, field: "user_id")
        self.tombstoneID = try Self.id(tombstoneID, field: "tombstone_id")
        mergedIDs = []
        for text in mergedUserIDs {
            let id = try Self.id(text, field: "merged_user_ids")
            if id != self.userID, !mergedIDs.contains(id) { mergedIDs.append(id) }
        }
        guard tombstoneID != userID, !mergedIDs.contains(self.tombstoneID) else {
            throw .invalidArgument("tombstone_id must differ from user_id and every merged_user_ids entry")
        }
    }

    private static func id(_ text: String, field: String) throws(ErasureError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument("\(field) must be a Rave ID (32 lowercase hex digits), got \(text.utf8.count) bytes")
        }
        return id
    }
}

/// The ids one erasure covers in a service, found in its transaction: the user, the merged ids the request named,
/// and every source `merged_users` resolved to any of them.
public struct ErasedIDs: Sendable, Hashable {
    /// The user first, then the merged ids.
    public var ids: [RaveID]
    /// What replaces them in rows the service keeps.
    public var tombstoneID: RaveID
    /// `merged_users` rows the erasure deleted.
    public var mergedRows: Int
}

/// Why an erasure or a call naming an erased user is refused.
public struct ErasureError: Error, Hashable, RPCStatusConvertible {
    public var code: StatusCode
    public var message: String

    public static func invalidArgument(_ message: String) -> Self { Self(code: .invalidArgument, message: message) }

    /// A call names a user this process erased (while it remembers the erasure, see `MergedUsers.resolve`).
    public static let erased = Self(code: .notFound, message: "this account was deleted")

    public var rpcError: RPCError? { RPCError(code, message) }
}

// MARK: - Erasing

extension MergedUsers {
    /// What an erasure another replica applied runs here (`run` calls it after this process's earlier calls
    /// finished): erase whatever a call of this process wrote under the ids meanwhile (with a tombstone of its own,
    /// since the announcement does not carry the erasure's), and drop them from memory; must be safe to repeat.
    public typealias ErasureSweep = @Sendable (_ erased: ErasedIDs) async throws -> Void

    /// Before the erasure's transaction: from now on this process refuses calls naming the user or a merged id
    /// (`ErasureError.erased`), and this returns once every call that started earlier has finished, so none of
    /// them writes under those ids after the transaction.
    public func refuse(_ erasure: UserErasure) async throws {
        let sources = try await pool.execute(MergedUsersStore.sources, [erasure.userID]).map {
            try $0.decode(RaveID.self, at: 0)
        }
        markErased([erasure.userID] + erasure.mergedIDs + sources)
        if await drain(source: erasure.userID) { settled.withLock { $0.insert(erasure.userID) } }
    }

    /// Inside the erasure's transaction: records `erasure.erasureID` (nil when it was applied before: nothing is
    /// to change), deletes the `merged_users` rows that name the user or an id merged into it, and announces the
    /// erasure to the other replicas at commit; returns every id the service must erase.
    public func beginErasure(_ erasure: UserErasure, in transaction: PostgresTransaction) async throws -> ErasedIDs? {
        guard try await !transaction.execute(MergedUsersStore.recordErasure, [erasure.erasureID]).isEmpty else {
            return nil
        }
        var ids = [erasure.userID] + erasure.mergedIDs
        let named = try await transaction.execute(MergedUsersStore.sourcesOfAny, [ids]).map {
            try $0.decode(RaveID.self, at: 0)
        }
        for id in named where !ids.contains(id) { ids.append(id) }
        let deleted = try await transaction.execute(MergedUsersStore.forget, [ids]).affectedRowCount
        markErased(ids)
        // A notification carries at most 8000 bytes: 33 per id.
        var start = 0
        while start < ids.count {
            let chunk = ids[start..<min(start + 200, ids.count)]
            try await transaction.execute(MergedUsersStore.announceErasure, [chunk.map(\.hex).joined(separator: " ")])
            start += chunk.count
        }
        return ErasedIDs(ids: ids, tombstoneID: erasure.tombstoneID, mergedRows: deleted)
    }

    /// Sets what an erasure recorded by another replica runs here; set once, by the service that owns the data.
    public func onErasure(_ body: @escaping ErasureSweep) {
        erasureSweep.withLock { $0 = body }
    }

    /// Those of `ids` this process knows to be erased (recipients of a notification to many users).
    public func erased(among ids: [RaveID]) -> Set<RaveID> {
        cache.withLock { cache in Set(ids.filter { cache.isErased($0) }) }
    }

    func markErased(_ ids: [RaveID]) {
        cache.withLock { cache in
            for id in ids { cache.markErased(id) }
        }
    }

    /// An erasure another replica announced: refuse the ids, wait for this process's earlier calls, then run the
    /// service's sweep until it succeeds (or the process stops).
    func sweepErasure(_ ids: [RaveID]) async {
        guard let first = ids.first, settled.withLock({ !$0.contains(first) }),
            let body = erasureSweep.withLock({ $0 })
        else { return }
        for _ in 0..<Self.sweepDrainAttempts where !stopped.isOpen {
            if await drain(source: first) { break }
        }
        var pause = Duration.milliseconds(50)
        while !stopped.isOpen {
            do {
                try await body(ErasedIDs(ids: ids, tombstoneID: .random(), mergedRows: 0))
                settled.withLock { $0.insert(first) }
                logger.info("swept an erasure recorded elsewhere", [("ids", "\(ids.count)")])
                return
            } catch {
                logger.warning("sweeping an erasure failed; retrying", [("error", "\(error)")])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }
}

/// One table's part in an erasure, as a named statement over `$1` (the ids, uuid[]) and `$2` (the tombstone).
public struct ErasureStep: Sendable {
    enum Kind {
        case delete, replace, rewrite
    }

    let statement: PostgresStatement
    let kind: Kind

    /// Deletes the rows of `table` naming one of the ids in any of `columns`.
    public static func delete(from table: String, where columns: String..., service: String) -> ErasureStep {
        ErasureStep(
            statement: PostgresStatement(
                name: "\(service)_erase_\(table)",
                sql: "DELETE FROM \(table) WHERE " + columns.map { "\($0) = ANY($1::uuid[])" }.joined(separator: " OR ")
            ),
            kind: .delete)
    }

    /// Replaces the ids by the tombstone in `column` of `table` (rows other users' data or idempotency depend on).
    public static func replace(in table: String, column: String, service: String) -> ErasureStep {
        ErasureStep(
            statement: PostgresStatement(
                name: "\(service)_erase_\(table)_\(column)",
                sql: "UPDATE \(table) SET \(column) = $2 WHERE \(column) = ANY($1::uuid[])"),
            kind: .replace)
    }

    /// Replaces the ids' 32 hex digits by the tombstone's wherever they occur in `column` of `table`, a bytea
    /// holding protobuf messages (a stored request or response other users may replay): the same length, so the
    /// message stays valid.
    public static func rewrite(in table: String, column: String, service: String) -> ErasureStep {
        let found = "position(convert_to($1, 'UTF8') IN \(column))"
        return ErasureStep(
            statement: PostgresStatement(
                name: "\(service)_erase_\(table)_\(column)",
                sql: """
                    UPDATE \(table) SET \(column) = overlay(\(column) PLACING convert_to($2, 'UTF8') FROM \(found) FOR 32)
                    WHERE \(found) > 0
                    """),
            kind: .rewrite)
    }
}

extension ErasedIDs {
    /// Runs `steps` in order in `transaction`; returns the rows they deleted or changed.
    public func apply(_ steps: [ErasureStep], in transaction: PostgresTransaction) async throws -> Int {
        var rows = 0
        for step in steps {
            switch step.kind {
            case .delete: rows += try await transaction.execute(step.statement, [ids]).affectedRowCount
            case .replace: rows += try await transaction.execute(step.statement, [ids, tombstoneID]).affectedRowCount
            case .rewrite:
                for id in ids {
                    // One occurrence per row and statement: again until none is left (a message names an id a few
                    // times at most).
                    var changed = try await transaction.execute(step.statement, [id.hex, tombstoneID.hex])
                        .affectedRowCount
                    rows += changed
                    while changed > 0 {
                        changed = try await transaction.execute(step.statement, [id.hex, tombstoneID.hex])
                            .affectedRowCount
                    }
                }
            }
        }
        return rows
    }
}

extension UserErasure {
    /// A participant's `EraseUser`: checks the request, makes this process refuse calls naming the user (and wait
    /// out those already running) before `erase` runs, so nothing is written under the ids after its transaction,
    /// and answers with `erase`'s rows, nil meaning the erasure id was applied before.
    public static func answer(
        _ request: ErasureV1.EraseUserRequest, refusingIn merges: MergedUsers,
        erase: (UserErasure) async throws -> Int?
    ) async throws -> ErasureV1.EraseUserResponse {
        let erasure = try UserErasure(
            erasureID: request.erasureId, userID: request.userId, mergedUserIDs: request.mergedUserIds,
            tombstoneID: request.tombstoneId)
        try await merges.refuse(erasure)
        let rows = try await erase(erasure)
        return ErasureV1.EraseUserResponse(alreadyApplied: rows == nil, rowsAffected: UInt64(rows ?? 0))
    }
}
