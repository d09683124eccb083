import RaveMessages
import RavePostgres
import Testing

@testable import Push

/// The merge participant's SQL, in the store: a merge id is recorded once, and a move leaves nothing under the
/// source.
@Suite("Push: merge store")
struct PushMergeStoreTests {
    @Test func aMergeIDIsRecordedOnceAndTheMoveLeavesNothingUnderTheSource() async throws {
        try await PushFixture.with { fixture in
            let (target, source) = (RaveID.random(), RaveID.random())
            try await fixture.register(source, token: "source-phone")
            try await fixture.register(target, token: "target-phone")
            _ = try await fixture.send([source])
            let store = MergeStore()
            let first = try await fixture.pool.transaction { transaction in
                let recorded = try await store.record(
                    mergeID: "m-store", source: source, target: target, in: transaction)
                try await store.move(source, into: target, in: transaction)
                return recorded
            }
            let again = try await fixture.pool.transaction { transaction in
                try await store.record(mergeID: "m-store", source: source, target: target, in: transaction)
            }
            #expect(first && !again)
            #expect(try await fixture.rows(of: source) == 0)
            #expect(try await fixture.rows(of: target) == 3, "two device tokens and the source's inbox entry")
        }
    }
}
