import CRaveSystem
import RaveTelemetry
import Synchronization

/// Hands heap memory the process has freed back to the system, so a burst (a flood of connections, many large
/// frames) does not leave the process at its peak size once the burst is over.
///
/// glibc's malloc keeps freed memory in its arenas for reuse, one arena per busy thread, and returns it only
/// from the top of each heap; after a flood most of it stays resident. Two measures bound that:
///
/// - `configureAllocator()`, at start-up, fixes malloc's mmap threshold at 256 KiB and its trim threshold at
///   1 MiB. Left alone, glibc raises the mmap threshold (up to 32 MiB) the first time a large block is freed,
///   after which frame-sized buffers come from the heap and stay there; fixed, every allocation of 256 KiB or
///   more is its own mapping, unmapped when freed.
/// - `run()` checks every `interval` how much malloc holds free; when that is more than `threshold` and has
///   changed since the last trim (memory was freed or reused since), it calls `malloc_trim`, which returns the
///   free pages of every arena, not just the top of the main heap. Released pages stay counted as free chunks,
///   hence the "changed" test: a quiet process is not trimmed again and again for nothing.
public final class MemoryTrimmer: Service {
    public let name = "memory-trimmer"
    private let interval: Duration
    private let threshold: Int
    private let logger: Logger
    private let stopped = ShutdownLatch()
    /// Free heap bytes right after the last trim.
    private let freeAfterLastTrim = Atomic<Int>(-1)

    /// Free heap above which a trim is worth its cost (default 16 MiB).
    public static let defaultThreshold = 16 << 20

    public init(interval: Duration, threshold: Int = MemoryTrimmer.defaultThreshold, logger: Logger) {
        self.interval = interval
        self.threshold = threshold
        self.logger = logger
    }

    /// Fixes malloc's thresholds (see the type's comment); call once at start-up, before the event loops start.
    public static func configureAllocator() {
        _ = rave_malloc_configure(256 << 10, 1 << 20, 0)
    }

    /// The process's resident set size in bytes (0 when /proc cannot be read).
    public static var residentBytes: Int { Int(rave_resident_bytes()) }

    /// Bytes malloc holds as free chunks in all arenas.
    public static var freeHeapBytes: Int { Int(rave_malloc_free_bytes()) }

    /// Trims now when malloc holds more than `threshold` free and that changed since the last trim; returns
    /// whether it trimmed.
    @discardableResult
    public func trimIfWorthwhile() -> Bool {
        let free = Self.freeHeapBytes
        guard free > threshold, free != freeAfterLastTrim.load(ordering: .relaxed) else { return false }
        let resident = Self.residentBytes
        rave_malloc_trim()
        freeAfterLastTrim.store(Self.freeHeapBytes, ordering: .relaxed)
        logger.debug(
            "returned free heap memory to the system",
            [
                ("free_heap", String(free)), ("resident_before", String(resident)),
                ("resident_after", String(Self.residentBytes)),
            ])
        return true
    }

    public func run() async throws {
        guard interval > .zero else {
            await stopped.wait()
            return
        }
        let worker = Task { [interval] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if !Task.isCancelled { trimIfWorthwhile() }
            }
        }
        await stopped.wait()
        worker.cancel()
        await worker.value
    }

    public func shutdown() async {
        stopped.open()
    }
}
