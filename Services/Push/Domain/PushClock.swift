import Foundation
import Synchronization

/// The time the consent rules, retries and TTLs are judged by; injected so tests can set the hour.
protocol PushClock: Sendable {
    func now() -> Date
}

/// The wall clock.
struct SystemClock: PushClock {
    func now() -> Date { Date() }
}

/// A clock that moves only when told to, for tests.
final class ManualClock: PushClock {
    private let current: Mutex<Date>

    init(_ start: Date) { current = Mutex(start) }

    func now() -> Date { current.withLock { $0 } }

    func set(_ date: Date) { current.withLock { $0 = date } }

    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}
