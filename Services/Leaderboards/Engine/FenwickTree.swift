/// Prefix sums over block sizes with O(log n) update, prefix and search (a binary indexed tree).
struct FenwickTree {
    /// 1-based internally: `tree[i]` sums the `i & -i` values ending at i.
    private var tree: [Int] = [0]

    /// Replaces every value, in O(n).
    mutating func rebuild(_ values: [Int]) {
        tree = [0] + values
        accumulate()
    }

    /// Inserts `value` before the 0-based `position` (a new block), in O(n) over this flat array alone: the
    /// values are recovered from the sums in place, so the blocks themselves are never touched.
    mutating func insert(_ value: Int, at position: Int) {
        separate()
        tree.insert(value, at: position + 1)
        accumulate()
    }

    /// Removes the value at the 0-based `position` (an emptied block), in O(n).
    mutating func remove(at position: Int) {
        separate()
        tree.remove(at: position + 1)
        accumulate()
    }

    /// Adds `delta` to the value at the 0-based `position`.
    mutating func add(_ delta: Int, at position: Int) {
        var index = position + 1
        while index < tree.count {
            tree[index] += delta
            index += index & -index
        }
    }

    /// The sum of the values before the 0-based `position`.
    func prefixSum(_ position: Int) -> Int {
        var sum = 0
        var index = position
        while index > 0 {
            sum += tree[index]
            index -= index & -index
        }
        return sum
    }

    /// The 0-based position whose value covers `rank`, and the offset of `rank` inside it.
    ///
    /// That is the smallest p with prefixSum(p + 1) > rank; requires rank < the total.
    func find(_ rank: Int) -> (position: Int, offset: Int) {
        var position = 0
        var remaining = rank
        var step = 1
        while step * 2 < tree.count { step *= 2 }
        while step > 0 {
            let next = position + step
            if next < tree.count, tree[next] <= remaining {
                position = next
                remaining -= tree[next]
            }
            step /= 2
        }
        return (position, remaining)
    }

    var residentBytes: Int { tree.capacity * MemoryLayout<Int>.stride }

    /// Turns plain values into the tree's partial sums: each index adds itself into its parent, children first.
    private mutating func accumulate() {
        for index in 1..<tree.count {
            let parent = index + (index & -index)
            if parent < tree.count { tree[parent] += tree[index] }
        }
    }

    /// The inverse of `accumulate`: parents first (descending), each index takes itself out of its parent again.
    private mutating func separate() {
        for index in stride(from: tree.count - 1, to: 0, by: -1) {
            let parent = index + (index & -index)
            if parent < tree.count { tree[parent] -= tree[index] }
        }
    }
}
