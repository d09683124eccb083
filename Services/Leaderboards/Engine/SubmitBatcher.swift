import RaveRuntime

/// Group commit of score writes: writes that arrive while earlier commits run are committed together in one
/// statement, then every waiting submit resumes (`WorkGrouper`).
///
/// A submit is acknowledged only after its batch committed, so durability costs one commit (one WAL flush) per
/// batch instead of one per score. A second commit starts beside a running one only once `minimumConcurrentBatch`
/// writes wait: each commit costs PostgreSQL ~200 µs of CPU whatever its size, so a free slot is not spent on a
/// batch of one or two writes.
struct SubmitBatcher: Sendable {
    typealias Commit = @Sendable ([ScoreWrite]) async throws -> Void

    private let grouper: WorkGrouper<ScoreWrite, Void>

    init(
        maximumBatch: Int = 1024, maximumConcurrentCommits: Int = 2, minimumConcurrentBatch: Int = 32,
        commit: @escaping Commit
    ) {
        grouper = WorkGrouper(
            maximumGroup: maximumBatch, maximumConcurrentGroups: maximumConcurrentCommits,
            minimumConcurrentGroup: minimumConcurrentBatch
        ) { writes in
            try await commit(writes)
            return Array(repeating: (), count: writes.count)
        }
    }

    /// Returns once `write` is committed; throws the batch's error if the commit failed.
    func submit(_ write: ScoreWrite) async throws {
        try await grouper.submit(write)
    }

    /// Writes waiting for a commit to take them.
    var queuedWrites: Int { grouper.queued }
}
