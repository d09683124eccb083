import Synchronization

/// Group commit: score writes that arrive while earlier commits are running are committed together in one
/// statement, then every waiting submit resumes with that one outcome.
///
/// A submit is acknowledged only after its batch committed, so durability costs one commit (one WAL flush) per
/// batch instead of one per score. There is no timer: a write arriving while no commit runs starts one at once (an
/// idle service answers in one round trip). While commits run, another one starts (up to
/// `maximumConcurrentCommits`) once `minimumConcurrentBatch` writes wait; otherwise the writes wait for the next
/// commit to finish, which then takes everything that queued meanwhile. Batches so grow with the load and the
/// commit latency by themselves, and a commit slot that frees up is not spent on a batch of one or two writes (each
/// commit costs PostgreSQL ~200 µs of CPU whatever its size). A full batch (`maximumBatch`) starts a commit even
/// above the limit.
final class SubmitBatcher: Sendable {
    typealias Commit = @Sendable ([ScoreWrite]) async throws -> Void

    private struct Pending {
        var writes: [ScoreWrite] = []
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var commitsRunning = 0
    }

    private struct Batch {
        var writes: [ScoreWrite]
        var waiters: [CheckedContinuation<Void, any Error>]
    }

    private let state = Mutex(Pending())
    private let commit: Commit
    private let maximumBatch: Int
    private let maximumConcurrentCommits: Int
    private let minimumConcurrentBatch: Int

    init(
        maximumBatch: Int = 1024, maximumConcurrentCommits: Int = 2, minimumConcurrentBatch: Int = 32,
        commit: @escaping Commit
    ) {
        self.maximumBatch = maximumBatch
        self.maximumConcurrentCommits = maximumConcurrentCommits
        self.minimumConcurrentBatch = minimumConcurrentBatch
        self.commit = commit
    }

    /// Returns once `write` is committed; throws the batch's error if the commit failed.
    func submit(_ write: ScoreWrite) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let batch = state.withLock { pending -> Batch? in
                pending.writes.append(write)
                pending.waiters.append(continuation)
                let startsCommit =
                    pending.commitsRunning == 0 || pending.writes.count >= maximumBatch
                    || (pending.commitsRunning < maximumConcurrentCommits
                        && pending.writes.count >= minimumConcurrentBatch)
                guard startsCommit else { return nil }
                pending.commitsRunning += 1
                return Self.take(&pending)
            }
            // Unowned on purpose, and bounded: the commit loop runs only while submitters wait on it (they are
            // suspended here) and ends when nothing is queued; the RPC server drains every call before the pool
            // closes.
            if let batch { Task { await self.commitUntilIdle(batch) } }
        }
    }

    /// Writes waiting for a commit to take them.
    var queuedWrites: Int { state.withLock { $0.writes.count } }

    private static func take(_ pending: inout Pending) -> Batch {
        let batch = Batch(writes: pending.writes, waiters: pending.waiters)
        pending.writes = []
        pending.waiters = []
        return batch
    }

    /// Commits `first`, then whatever queued while it ran, until nothing is waiting.
    private func commitUntilIdle(_ first: Batch) async {
        var batch = first
        while true {
            do {
                try await commit(batch.writes)
                for waiter in batch.waiters { waiter.resume() }
            } catch {
                for waiter in batch.waiters { waiter.resume(throwing: error) }
            }
            let next = state.withLock { pending -> Batch? in
                guard !pending.writes.isEmpty else {
                    pending.commitsRunning -= 1
                    return nil
                }
                return Self.take(&pending)
            }
            guard let next else { return }
            batch = next
        }
    }
}
