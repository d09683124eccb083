import RaveRuntime
import RaveTelemetry
import Synchronization

/// Keeps this instance's board leases: renews them every third of the lease duration, so two renewals may fail
/// before a lease lapses, and releases them at shutdown, after the RPC server drained, so successors take the
/// boards at once instead of waiting for the expiry.
final class BoardLeaseKeeper: Service {
    let name = "board-lease-keeper"
    private let ownership: BoardOwnership
    private let logger: Logger
    private let stopping = ShutdownLatch()
    private let sleeper = Mutex<Task<Void, Never>?>(nil)

    init(ownership: BoardOwnership, logger: Logger) {
        self.ownership = ownership
        self.logger = logger.with("component", "board-leases")
    }

    var renewalInterval: Duration { ownership.leaseDuration / 3 }

    func run() async throws {
        var failing = false
        while !stopping.isOpen {
            await sleepOrStop(renewalInterval)
            if stopping.isOpen { break }
            do {
                try await ownership.renewAll()
                if failing { logger.info("lease renewal works again") }
                failing = false
            } catch {
                // The leases lapse on their own (this instance stops serving them at their local expiry).
                if !failing { logger.warning("lease renewal failed", [("error", "\(error)")]) }
                failing = true
            }
        }
        do {
            try await ownership.releaseAll()
        } catch {
            logger.warning(
                "releasing the board leases failed; successors wait for their expiry", [("error", "\(error)")])
        }
    }

    func shutdown() async {
        stopping.open()
        sleeper.withLock { $0?.cancel() }
    }

    private func sleepOrStop(_ duration: Duration) async {
        let sleep = Task<Void, Never> { _ = try? await Task.sleep(for: duration) }
        sleeper.withLock { $0 = sleep }
        // A shutdown between the loop's check and storing the task would otherwise not cut this sleep short.
        if stopping.isOpen { sleep.cancel() }
        await sleep.value
    }
}
