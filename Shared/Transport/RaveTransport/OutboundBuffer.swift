/// Bytes waiting to be written: appended at the end, consumed from the front.
///
/// A read index instead of `removeFirst` keeps consuming O(1); the consumed prefix is dropped only when it
/// is at least half the storage, so compaction costs O(1) amortized per byte.
struct OutboundBuffer {
    private var storage: [UInt8] = []
    private var readIndex = 0

    /// Capacity kept after the buffer drains; larger storage is released so an idle connection is small.
    private static let retainedCapacity = 256 << 10

    /// Bytes not yet consumed.
    var count: Int { storage.count - readIndex }
    var isEmpty: Bool { readIndex == storage.count }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex > 0, readIndex >= storage.count / 2 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// Marks `byteCount` bytes from the front as written.
    mutating func consume(_ byteCount: Int) {
        precondition(byteCount <= count, "consumed more than was buffered")
        readIndex += byteCount
        if readIndex == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= Self.retainedCapacity)
            readIndex = 0
        }
    }

    /// Calls `body` with up to `limit` unconsumed bytes from the front.
    func withReadableBytes<Result>(limit: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withUnsafeBytes { all in
            let end = min(storage.count, readIndex + limit)
            return body(UnsafeRawBufferPointer(rebasing: all[readIndex..<end]))
        }
    }
}
