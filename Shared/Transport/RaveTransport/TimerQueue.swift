/// A min-heap of deadlines with lazy cancellation, owned by one event loop.
///
/// Callbacks live in a slot table indexed by the handle, with a generation per slot so a stale handle can
/// never cancel a newer timer; inserting and cancelling cost no hashing and, once the table has grown to
/// the working set, no allocation besides the callback's own context.
///
/// Cancelled entries stay in the heap until they reach the top or until they outnumber the live ones, when
/// the heap is rebuilt: most RPC deadlines are cancelled long before they fire, and without the rebuild a
/// busy server would carry every call of the last deadline period in the heap.
struct TimerQueue {
    private struct Entry {
        var deadline: UInt64
        var slot: UInt32
        var generation: UInt32
    }

    private struct Slot {
        /// Bumped whenever the slot is released, so heap entries and handles of its earlier timers go stale.
        var generation: UInt32 = 0
        var callback: (() -> Void)?
    }

    private var heap: [Entry] = []
    private var slots: [Slot] = []
    private var freeSlots: [UInt32] = []

    /// Live (scheduled, not fired, not cancelled) timers.
    private(set) var count = 0

    mutating func insert(deadline: UInt64, callback: @escaping () -> Void) -> TimerHandle {
        let slot: UInt32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = UInt32(slots.count)
            slots.append(Slot())
        }
        slots[Int(slot)].callback = callback
        count += 1
        let generation = slots[Int(slot)].generation
        heap.append(Entry(deadline: deadline, slot: slot, generation: generation))
        siftUp(heap.count - 1)
        return TimerHandle(id: UInt64(generation) << 32 | UInt64(slot))
    }

    mutating func cancel(_ handle: TimerHandle) {
        let slot = Int(truncatingIfNeeded: handle.id & 0xffff_ffff)
        let generation = UInt32(truncatingIfNeeded: handle.id >> 32)
        // A fired or cancelled timer's slot has moved on to a newer generation.
        guard slot < slots.count, slots[slot].generation == generation else { return }
        _ = release(slot)
        // Drop cancelled entries at the top so `nextDeadline` stays meaningful.
        while let top = heap.first, !isLive(top) { removeTop() }
        if heap.count > 1024, heap.count > 2 * count { compact() }
    }

    /// Heap entries, live or cancelled (for tests).
    var storedEntryCount: Int { heap.count }

    /// The earliest live deadline.
    var nextDeadline: UInt64? {
        heap.first?.deadline
    }

    /// Removes and returns the callback of the earliest timer due at `now`.
    mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let top = heap.first, top.deadline <= now {
            removeTop()
            if isLive(top), let callback = release(Int(top.slot)) { return callback }
        }
        while let top = heap.first, !isLive(top) { removeTop() }
        return nil
    }

    /// Whether the entry's timer is still scheduled; a slot in use always holds a callback.
    private func isLive(_ entry: Entry) -> Bool {
        slots[Int(entry.slot)].generation == entry.generation
    }

    /// Frees a slot and returns its callback.
    private mutating func release(_ slot: Int) -> (() -> Void)? {
        let callback = slots[slot].callback
        slots[slot].callback = nil
        slots[slot].generation &+= 1
        freeSlots.append(UInt32(slot))
        count -= 1
        return callback
    }

    private mutating func compact() {
        let slots = self.slots
        heap.removeAll { slots[Int($0.slot)].generation != $0.generation }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
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

extension Duration {
    /// Whole nanoseconds, zero for negative durations: what the loops' timers and deadlines count in.
    public var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
