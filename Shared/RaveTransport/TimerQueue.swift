/// A min-heap of deadlines with lazy cancellation, owned by one event loop.
///
/// Cancelled entries stay in the heap until they reach the top or until they outnumber the live ones, when
/// the heap is rebuilt: most RPC deadlines are cancelled long before they fire, and without the rebuild a
/// busy server would carry every call of the last deadline period in the heap.
struct TimerQueue {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var callbacks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    var count: Int { callbacks.count }

    mutating func insert(deadline: UInt64, callback: @escaping () -> Void) -> TimerHandle {
        let id = nextID
        nextID += 1
        callbacks[id] = callback
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return TimerHandle(id: id)
    }

    mutating func cancel(_ handle: TimerHandle) {
        guard callbacks.removeValue(forKey: handle.id) != nil else { return }
        // Drop cancelled entries at the top so `nextDeadline` stays meaningful.
        while let top = heap.first, callbacks[top.id] == nil { removeTop() }
        if heap.count > 1024, heap.count > 2 * callbacks.count { compact() }
    }

    /// Heap entries, live or cancelled (for tests).
    var storedEntryCount: Int { heap.count }

    private mutating func compact() {
        heap.removeAll { callbacks[$0.id] == nil }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    /// The earliest live deadline.
    var nextDeadline: UInt64? {
        heap.first?.deadline
    }

    /// Removes and returns the callback of the earliest timer due at `now`.
    mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let top = heap.first, top.deadline <= now {
            removeTop()
            if let callback = callbacks.removeValue(forKey: top.id) { return callback }
        }
        while let top = heap.first, callbacks[top.id] == nil { removeTop() }
        return nil
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
