import RaveCrypto
import RavePostgres
import Testing

@testable import Leaderboards

/// The obviously-correct model: a dictionary of bests, sorted on every query.
struct BruteForceBoard {
    let ascending: Bool
    var bests: [RaveID: (score: Int64, achievedAt: Int64)] = [:]

    mutating func record(_ user: RaveID, _ score: Int64, _ achievedAt: Int64) -> Bool {
        if let best = bests[user] {
            let better = ascending ? score < best.score : score > best.score
            guard better || (score == best.score && achievedAt < best.achievedAt) else { return false }
        }
        bests[user] = (score, achievedAt)
        return true
    }

    var ordered: [RankedScore] {
        let sorted = bests.sorted { left, right in
            if left.value.score != right.value.score {
                return ascending ? left.value.score < right.value.score : left.value.score > right.value.score
            }
            if left.value.achievedAt != right.value.achievedAt { return left.value.achievedAt < right.value.achievedAt }
            return left.key < right.key
        }
        return sorted.enumerated().map { offset, element in
            RankedScore(
                userID: element.key, score: element.value.score, achievedAt: element.value.achievedAt,
                position: offset + 1)
        }
    }
}

@Suite("RankIndex")
struct RankIndexTests {
    @Test("ranks match a brute-force model over random operations", arguments: [true, false])
    func ranksMatchBruteForceModel(ascending: Bool) {
        var generator = SplitMix64(seed: ascending ? 1 : 2)
        var index = RankIndex(ascending: ascending)
        var model = BruteForceBoard(ascending: ascending)
        // Few users and a narrow score range force replacements and ties; many operations force block splits.
        let users = (0..<1500).map { _ in RaveID(high: generator.next(), low: generator.next()) }
        for step in 0..<20_000 {
            let user = users[Int.random(in: 0..<users.count, using: &generator)]
            let score = Int64.random(in: -50...50, using: &generator)
            let achievedAt = Int64(step / 3)
            if Int.random(in: 0..<40, using: &generator) == 0 {
                #expect(index.remove(userID: user) == (model.bests.removeValue(forKey: user) != nil))
            } else {
                #expect(
                    index.record(userID: user, score: score, achievedAt: achievedAt)
                        == model.record(user, score, achievedAt))
            }
            if step % 2000 == 1999 { expectEqual(index, model, users: users) }
        }
        expectEqual(index, model, users: users)
    }

    @Test("bulk build equals inserting one by one", arguments: [true, false])
    func bulkBuildEqualsIncrementalInserts(ascending: Bool) {
        var generator = SplitMix64(seed: 7)
        var model = BruteForceBoard(ascending: ascending)
        var records: [(userID: RaveID, score: Int64, achievedAt: Int64)] = []
        for step in 0..<5000 {
            let user = RaveID(high: 0, low: UInt64.random(in: 0..<3000, using: &generator))
            let score = Int64.random(in: 0...100, using: &generator)
            records.append((user, score, Int64(step % 17)))
            _ = model.record(user, score, Int64(step % 17))
        }
        // The model keeps the first of two equal scores; the bulk build must agree, so feed it in the same order.
        let index = RankIndex(ascending: ascending, records: records)
        expectEqual(index, model, users: Array(model.bests.keys))
    }

    @Test("equal scores rank by time, then by Rave ID")
    func tiesBreakByTimeThenRaveID() {
        var index = RankIndex(ascending: false)
        let first = RaveID(high: 0, low: 9)
        let second = RaveID(high: 0, low: 1)
        let third = RaveID(high: 0, low: 2)
        index.record(userID: first, score: 10, achievedAt: 100)
        index.record(userID: third, score: 10, achievedAt: 200)
        index.record(userID: second, score: 10, achievedAt: 200)
        #expect(index.scores(from: 1, limit: 10).map(\.userID) == [first, second, third])
        #expect(index.standing(of: third)?.position == 3)
    }

    @Test("extreme scores keep their order on descending boards")
    func extremeScoresKeepOrder() {
        var index = RankIndex(ascending: false)
        index.record(userID: RaveID(high: 0, low: 1), score: .min, achievedAt: 1)
        index.record(userID: RaveID(high: 0, low: 2), score: .max, achievedAt: 1)
        index.record(userID: RaveID(high: 0, low: 3), score: 0, achievedAt: 1)
        #expect(index.scores(from: 1, limit: 3).map(\.score) == [.max, 0, .min])
    }

    @Test("recordStanding agrees with the model while players climb to the top", arguments: [true, false])
    func recordStandingMatchesModel(ascending: Bool) {
        var generator = SplitMix64(seed: ascending ? 11 : 12)
        var model = BruteForceBoard(ascending: ascending)
        var records: [(userID: RaveID, score: Int64, achievedAt: Int64)] = []
        let users = (0..<4000).map { _ in RaveID(high: generator.next(), low: generator.next()) }
        for user in users {
            let score = Int64.random(in: 0..<1000, using: &generator)
            records.append((user, score, 0))
            _ = model.record(user, score, 0)
        }
        var index = RankIndex(ascending: ascending, records: records)
        // Mostly new bests past every other score (the submit load: each one lands in the first block, which
        // splits over and over, while the players' old entries drain other blocks), some anywhere.
        for step in 1...6000 {
            let user = users[Int.random(in: 0..<users.count, using: &generator)]
            let climbing = Int.random(in: 0..<4, using: &generator) != 0
            let rising = Int64(1000 + step)
            let score = climbing ? (ascending ? -rising : rising) : Int64.random(in: 0..<2000, using: &generator)
            let recorded = index.recordStanding(userID: user, score: score, achievedAt: Int64(step))
            #expect(recorded.replaced == model.record(user, score, Int64(step)))
            #expect(index.standing(of: user) == recorded.standing)
            if step % 1500 == 0 { expectEqual(index, model, users: users) }
        }
    }

    @Test("block sums follow inserted and removed blocks")
    func fenwickInsertAndRemove() {
        var generator = SplitMix64(seed: 5)
        var values = (0..<37).map { _ in Int.random(in: 0...512, using: &generator) }
        var tree = FenwickTree()
        tree.rebuild(values)
        for _ in 0..<200 {
            if values.count > 1, Bool.random(using: &generator) {
                let position = Int.random(in: 0..<values.count, using: &generator)
                values.remove(at: position)
                tree.remove(at: position)
            } else {
                let position = Int.random(in: 0...values.count, using: &generator)
                let value = Int.random(in: 1...512, using: &generator)
                values.insert(value, at: position)
                tree.insert(value, at: position)
            }
            for position in 0...values.count {
                #expect(tree.prefixSum(position) == values[..<position].reduce(0, +))
            }
        }
    }

    private func expectEqual(
        _ index: RankIndex, _ model: BruteForceBoard, users: [RaveID], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let expected = model.ordered
        #expect(index.count == expected.count, sourceLocation: sourceLocation)
        #expect(index.scores(from: 1, limit: expected.count + 5) == expected, sourceLocation: sourceLocation)
        let byUser = Dictionary(uniqueKeysWithValues: expected.map { ($0.userID, $0) })
        for user in users {
            #expect(index.standing(of: user) == byUser[user], sourceLocation: sourceLocation)
        }
        // Pages that start mid-block and cross block boundaries.
        for start in stride(from: 1, through: expected.count, by: 97) {
            let page = index.scores(from: start, limit: 13)
            #expect(
                page == Array(expected[(start - 1)..<min(start + 12, expected.count)]), sourceLocation: sourceLocation)
        }
    }
}
