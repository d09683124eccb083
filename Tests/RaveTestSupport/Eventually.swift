/// Polls `condition` every 20 ms until it holds, or throws `ConditionTimeout` after `timeout`.
///
/// For effects that arrive asynchronously (another process's sweep, a notification), never a sleep to synchronise;
/// the timeout is a bound for a stuck test, not a latency claim.
public func eventually(
    timeout: Duration = .seconds(10), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw ConditionTimeout(timeout: timeout)
}

/// A condition `eventually` waited for did not hold in time.
public struct ConditionTimeout: Error, CustomStringConvertible {
    public let timeout: Duration
    public var description: String { "the condition did not hold within \(timeout)" }
}
