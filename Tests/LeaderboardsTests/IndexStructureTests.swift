import RavePostgres
import Testing

@testable import Leaderboards

/// The index's storage: the slot table and the slot blocks, against plain models, and its memory per entry.
@Suite("Index structure")
struct IndexStructureTests {
    @Test("the user table finds every id it was given, across growth of its buckets and records")
    func userTableMatchesDictionary() {
        var generator = SeededGenerator(state: 21)
        var table = UserTable()
        var model: [RaveID: UInt32] = [:]
        var ids: [RaveID] = []
        for step in 0..<60_000 {
            // Sequential ids (as tests use) and random ones (as Rave IDs are), some seen before.
            let id: RaveID
            if !ids.isEmpty, Int.random(in: 0..<4, using: &generator) == 0 {
                id = ids[Int.random(in: 0..<ids.count, using: &generator)]
            } else {
                id = step % 2 == 0 ? RaveID(high: 0, low: UInt64(step)) : RaveID(high: generator.next(), low: 7)
                ids.append(id)
            }
            let slot = table.insertSlot(for: id)
            if let known = model[id] { #expect(slot == known) } else { model[id] = slot }
            #expect(table[slot].id == id)
        }
        for (id, slot) in model { #expect(table.slot(of: id) == slot) }
        #expect(table.slot(of: RaveID(high: 1, low: 1)) == nil)
        // A record costs its 32 bytes and a bucket at a load of at least 0.45: never twice what it needs.
        #expect(table.residentBytes <= model.count * 48)
    }

    @Test(
        "inserts, updates, removals and re-entries over many ties match the model at every step",
        arguments: [true, false])
    func removalsAndTiesMatchModel(ascending: Bool) {
        var generator = SeededGenerator(state: ascending ? 31 : 32)
        var index = RankIndex(ascending: ascending)
        var model = BruteForceBoard(ascending: ascending)
        // Three scores and four times: nearly every comparison is a tie down to the Rave ID; 3000 players fill
        // several blocks, and waves of removals empty whole blocks.
        let users = (0..<3000).map { _ in RaveID(high: generator.next() % 3, low: generator.next()) }
        for step in 0..<24_000 {
            let user = users[Int.random(in: 0..<users.count, using: &generator)]
            let score = Int64.random(in: 0...2, using: &generator)
            let achievedAt = Int64.random(in: 0...3, using: &generator)
            let removing = (step / 4000) % 2 == 1 ? 3 : 30
            switch Int.random(in: 0..<removing, using: &generator) {
            case 0:
                #expect(index.remove(userID: user) == (model.bests.removeValue(forKey: user) != nil))
            case 1:
                index.replace(userID: user, score: score, achievedAt: achievedAt)
                model.bests[user] = (score, achievedAt)
            default:
                let recorded = index.recordStanding(userID: user, score: score, achievedAt: achievedAt)
                #expect(recorded.replaced == model.record(user, score, achievedAt))
                #expect(recorded.standing.position == model.ordered.firstIndex { $0.userID == user }.map { $0 + 1 })
            }
            if step % 3000 == 2999 { expectMatches(index, model, users: users) }
        }
        expectMatches(index, model, users: users)
    }

    @Test("a built index holds at most 48 bytes per entry, and pages and positions match the model")
    func builtIndexIsCompact() {
        var generator = SeededGenerator(state: 41)
        var model = BruteForceBoard(ascending: false)
        var records: [ScoreEntry] = []
        for step in 0..<50_000 {
            let user = RaveID(high: generator.next(), low: generator.next())
            let score = Int64.random(in: 0..<10_000, using: &generator)
            records.append((user, score, Int64(step % 100)))
            _ = model.record(user, score, Int64(step % 100))
        }
        let index = RankIndex(ascending: false, chunks: [Array(records[..<20_000]), Array(records[20_000...])])
        #expect(index.residentBytes <= 48 * index.count)
        let expected = model.ordered
        #expect(index.scores(from: 1, limit: expected.count) == expected)
        for step in stride(from: 0, to: expected.count, by: 509) {
            #expect(index.standing(of: expected[step].userID) == expected[step])
        }
    }

    private func expectMatches(
        _ index: RankIndex, _ model: BruteForceBoard, users: [RaveID], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let expected = model.ordered
        #expect(index.count == expected.count, sourceLocation: sourceLocation)
        #expect(index.scores(from: 1, limit: expected.count + 1) == expected, sourceLocation: sourceLocation)
        let byUser = Dictionary(uniqueKeysWithValues: expected.map { ($0.userID, $0) })
        for user in users { #expect(index.standing(of: user) == byUser[user], sourceLocation: sourceLocation) }
        for start in stride(from: 1, through: expected.count, by: 211) {
            #expect(
                index.scores(from: start, limit: 20) == Array(expected[(start - 1)..<min(start + 19, expected.count)]),
                sourceLocation: sourceLocation)
        }
    }
}
