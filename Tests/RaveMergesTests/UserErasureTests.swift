import RavePostgres
import RaveRPC
import RaveTestSupport
import Synchronization
import Testing

@testable import RaveMerges

@Suite("Erasures: recording, refusing, replicas")
struct UserErasureTests {
    static let appliedErasures = """
        CREATE TABLE applied_erasures (erasure_id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
        """

    /// Applies an erasure as a participant does: refuse, then record in a transaction.
    static func erase(_ erasure: UserErasure, by merges: MergedUsers, pool: PostgresPool) async throws -> ErasedIDs? {
        try await merges.refuse(erasure)
        return try await pool.transaction { transaction in try await merges.beginErasure(erasure, in: transaction) }
    }

    @Test func anErasureElsewhereIsRefusedAndSweptHereAfterItsOwnEarlierCalls() async throws {
        try await MergedUsersTable.with { pool in
            try await pool.withConnection { try await $0.runScript(Self.appliedErasures) }
            try await MergedUsersTable.listening(pool) { replica in
                let swept = Mutex<[([RaveID], Int)]>([])
                replica.onErasure { erased in swept.withLock { $0.append((erased.ids, replica.runningCalls)) } }
                let (user, merged, bystander) = (RaveID.random(), RaveID.random(), RaveID.random())
                let elsewhere = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
                try await MergedUsersTable.merge(merged, into: user, by: elsewhere, pool: pool)
                try await eventually { try await replica.resolve(merged) == user }
                // A call on this replica that named the user before the erasure and is still running.
                let gate = Gate()
                let service = replica.track(SlowService(gate: gate))
                let call = Task { try await service.methods[0].handler([], SlowService.context) }
                try await eventually { replica.runningCalls == 1 }

                let erasure = try UserErasure(
                    erasureID: "e-1", userID: user.hex, mergedUserIDs: [], tombstoneID: RaveID.random().hex)
                let erased = try #require(try await Self.erase(erasure, by: elsewhere, pool: pool))
                #expect(erased.ids == [user, merged] && erased.mergedRows == 1)
                let left = try await pool.query("SELECT count(*) FROM merged_users")[0].decode(Int.self, at: 0)
                #expect(left == 0)
                #expect(try await Self.erase(erasure, by: elsewhere, pool: pool) == nil, "a repeat changes nothing")
                await #expect(throws: ErasureError.erased) { _ = try await elsewhere.resolve(user) }

                try await eventually { (try? await replica.resolve(user)) == nil }
                await #expect(throws: ErasureError.erased) { _ = try await replica.resolve(merged) }
                #expect(try await replica.resolve(bystander) == bystander)
                #expect(replica.erased(among: [user, bystander, merged]) == [user, merged])
                #expect(swept.withLock { $0.isEmpty }, "the sweep must wait for the call that started earlier")

                gate.open()
                _ = try await call.value
                try await eventually { swept.withLock { $0.count == 1 } }
                let (ids, running) = swept.withLock { $0[0] }
                #expect(ids == [user, merged] && running == 0)
            }
        }
    }

    @Test func requestsAreCheckedInOurWords() throws {
        let user = RaveID.random().hex
        func problem(_ erasureID: String, _ userID: String, _ merged: [String], _ tombstone: String) -> String? {
            do {
                _ = try UserErasure(erasureID: erasureID, userID: userID, mergedUserIDs: merged, tombstoneID: tombstone)
                return nil
            } catch {
                #expect(error.code == .invalidArgument)
                return error.message
            }
        }
        #expect(problem("", user, [], RaveID.random().hex) == "erasure_id must be 1…128 bytes, got 0")
        #expect(
            problem("e", user.uppercased(), [], RaveID.random().hex)
                == "user_id must be a Rave ID (32 lowercase hex digits), got 32 bytes")
        #expect(
            problem("e", user, [], user) == "tombstone_id must differ from user_id and every merged_user_ids entry")
        #expect(problem("e", user, ["x"], RaveID.random().hex)?.hasPrefix("merged_user_ids must be a Rave ID") == true)
        let repeated = try UserErasure(
            erasureID: "e", userID: user, mergedUserIDs: [user, RaveID.random().hex], tombstoneID: RaveID.random().hex)
        #expect(repeated.mergedIDs.count == 1, "the user itself is not one of its merged ids")
    }
}
