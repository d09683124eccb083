import Synchronization

/// Group commit: collects concurrent score writes for up to `maximumDelay` or `maximumBatch` writes, commits them
/// in one statement, then resumes every waiting submit with the one outcome.
///
/// A submit is acknowledged only after its batch committed, so durability costs one commit per batch instead of
/// one per score. Several batches may be in flight at once (one per pool connection), so a slow commit does not
/// stall the writes that arrive meanwhile.
final class SubmitBatcher: Sendable {
    typealias Commit = @Sendable ([ScoreWrite]) async throws -> Void

    private struct Pending {
        var writes: [ScoreWrite] = []
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var flushScheduled = false
    }

    private let state = Mutex(Pending())
    private let commit: Commit
    private let maximumBatch: Int
    private let maximumDelay: Duration

    init(maximumBatch: Int = 512, maximumDelay: Duration = .milliseconds(1), commit: @escaping Commit) {
        self.maximumBatch = maximumBatch
        self.maximumDelay = maximumDelay
        self.commit = commit
    }

    /// Returns once `write` is committed; throws the batch's error if the commit failed.
    func submit(_ write: ScoreWrite) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let action = state.withLock { pending -> FlushAction in
                pending.writes.append(write)
                pending.waiters.append(continuation)
                if pending.writes.count >= maximumBatch {
                    return .now(Self.take(&pending))
                }
                if pending.flushScheduled { return .none }
                pending.flushScheduled = true
                return .later
            }
            switch action {
            case .none:
                break
            case .now(let batch):
                Task { await self.run(batch) }
            case .later:
                Task {
                    try? await Task.sleep(for: self.maximumDelay)
                    let batch = self.state.withLock { pending in
                        pending.flushScheduled = false
                        return Self.take(&pending)
                    }
                    await self.run(batch)
                }
            }
        }
    }

    private enum FlushAction {
        case none
        case now(Batch)
        case later
    }

    private struct Batch {
        var writes: [ScoreWrite]
        var waiters: [CheckedContinuation<Void, any Error>]
    }

    private static func take(_ pending: inout Pending) -> Batch {
        let batch = Batch(writes: pending.writes, waiters: pending.waiters)
        pending.writes.removeAll(keepingCapacity: true)
        pending.waiters.removeAll(keepingCapacity: true)
        return batch
    }

    private func run(_ batch: Batch) async {
        guard !batch.writes.isEmpty else { return }
        do {
            try await commit(batch.writes)
            for waiter in batch.waiters { waiter.resume() }
        } catch {
            for waiter in batch.waiters { waiter.resume(throwing: error) }
        }
    }
}
