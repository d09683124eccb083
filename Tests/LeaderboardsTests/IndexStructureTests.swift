import RaveCrypto
import RavePostgres
import Testing

@testable import Leaderboards

/// The index's storage: the slot table and the slot blocks, against plain models, and its memory per entry.
@Suite("Index structure")
struct IndexStructureTests {
    @Test("the user table finds every id it was given, across growth of its buckets and records")
    func userTableMatchesDictionary() {
        var generator = SplitMix64(seed: 21)
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
        var generator = SplitMix64(seed: ascending ? 31 : 32)
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
        var generator = SplitMix64(seed: 41)
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

    @Test(
        "a builder fed chunk by chunk builds the index one sort builds, and keeps taking scores after",
        arguments: [true, false])
    func builderMatchesOneSort(ascending: Bool) async {
        var generator = SplitMix64(seed: ascending ? 51 : 52)
        // Distinct players (as a version's rows are); few scores and times, so ties on both are common; the
        // extreme scores too.
        var records: [ScoreEntry] = []
        for step in 0..<40_000 {
            let user =
                step % 3 == 0
                ? RaveID(high: 0, low: UInt64(step)) : RaveID(high: generator.next(), low: generator.next())
            let extremes: [Int64] = [.min, .max, 0, -1]
            let score =
                step % 97 == 0 ? extremes[step % 4] : Int64.random(in: -20..<20, using: &generator)
            records.append((user, score, Int64.random(in: 0..<5, using: &generator)))
        }
        var builder = RankIndexBuilder(ascending: ascending)
        var start = 0
        // Chunks of uneven sizes, so runs of different lengths meet in the merges.
        for size in [1, 7, 300, 5000, 5000, 2, 9000, 4096, 4096, 4096] + Array(repeating: 1000, count: 100) {
            guard start < records.count else { break }
            let end = min(records.count, start + size)
            builder.add(Array(records[start..<end]))
            start = end
        }
        #expect(start == records.count)
        var built = await builder.build()
        var sorted = RankIndex(ascending: ascending, chunks: [records])
        #expect(built.count == records.count)
        #expect(built.residentBytes <= 48 * built.count)
        #expect(built.scores(from: 1, limit: records.count) == sorted.scores(from: 1, limit: records.count))
        for entry in records.prefix(2000) {
            #expect(built.standing(of: entry.userID) == sorted.standing(of: entry.userID))
        }
        // The built table takes new players, better scores and removals as the sorted one does.
        for step in 0..<3000 {
            let user =
                step % 2 == 0 ? records[Int.random(in: 0..<records.count, using: &generator)].userID : RaveID.random()
            let score = Int64.random(in: -25..<25, using: &generator)
            #expect(
                built.recordStanding(userID: user, score: score, achievedAt: Int64(step))
                    == sorted.recordStanding(userID: user, score: score, achievedAt: Int64(step)))
            if step % 10 == 0 { #expect(built.remove(userID: user) == sorted.remove(userID: user)) }
        }
        #expect(built.scores(from: 1, limit: built.count + 1) == sorted.scores(from: 1, limit: sorted.count + 1))
    }

    @Test("a table hashed in one pass over distinct records finds every id, then grows as one built by inserts")
    func distinctRecordsTableMatchesInserts() {
        var generator = SplitMix64(seed: 61)
        let ids = (0..<30_000).map { step in
            step % 2 == 0 ? RaveID(high: 0, low: UInt64(step)) : RaveID(high: generator.next(), low: generator.next())
        }
        var table = UserTable(
            distinctRecords: ids.map { UserRecord(id: $0, score: 0, achievedAt: UserRecord.absent) })
        for (slot, id) in ids.enumerated() { #expect(table.slot(of: id) == UInt32(slot)) }
        #expect(table.slot(of: RaveID(high: 1, low: 1)) == nil)
        #expect(table.residentBytes <= ids.count * 48)
        // New players after the bulk build, through several growths of the buckets.
        for step in 0..<40_000 {
            let id = RaveID(high: 2, low: UInt64(step))
            #expect(table.insertSlot(for: id) == UInt32(ids.count + step))
        }
        for (slot, id) in ids.enumerated() where slot % 7 == 0 { #expect(table.insertSlot(for: id) == UInt32(slot)) }
        #expect(table.slot(of: RaveID(high: 2, low: 39_999)) == UInt32(ids.count + 39_999))
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
