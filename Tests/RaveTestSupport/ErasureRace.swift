import RaveMerges
import Synchronization

extension ErasureChecks {
    /// Runs `erase` while `callers` concurrent callers repeat `call` naming the user it erases, each call tracked as
    /// the service's RPC wiring tracks calls (`merges.tracking`), until a call that started after `erase` answered
    /// was refused (`ErasureError.erased`), at most `attempts` calls each.
    ///
    /// Returns `erase`'s answer and what went wrong, empty when nothing did: a call that failed otherwise, one that
    /// started after the answer and went through, a caller never refused after the answer.
    public static func racing<Answer: Sendable>(
        _ call: @escaping @Sendable () async throws -> Void, callers: Int = 8, attempts: Int = 10_000,
        merges: MergedUsers, erase: () async throws -> Answer
    ) async throws -> (answer: Answer, problems: [String]) {
        let answered = AnsweredFlag()
        async let outcomes = ConcurrentCalls.run(callers) { _ -> String? in
            for _ in 0..<attempts where !Task.isCancelled {
                let after = answered.value.load(ordering: .acquiring)
                do {
                    try await merges.tracking { try await call() }
                    if after { return "a call that started after the erasure answered went through" }
                } catch let error as ErasureError where error == .erased {
                    if after { return nil }
                }
            }
            return "no call was refused after the erasure answered (\(attempts) calls)"
        }
        let answer = try await erase()
        answered.value.store(true, ordering: .releasing)
        let results = await outcomes
        var problems = ConcurrentCalls.failures(results).map { "\($0.value) × \($0.key)" }.sorted()
        for case .success(let problem?) in results { problems.append(problem) }
        return (answer, problems)
    }
}

/// Whether the raced erasure has answered.
private final class AnsweredFlag: Sendable {
    let value = Atomic<Bool>(false)
}
