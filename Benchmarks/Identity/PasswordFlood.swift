import Foundation
import Identity
import RaveMessages
import RaveRPC
import RaveTransport
import Synchronization

/// Wrong-password logins offered at a fixed rate (an open loop: the attacker does not wait for answers), each for
/// a new email from a new address, as a botnet stuffing credentials would send them: the login throttle never
/// stops them, so only the hashing pool's bound does.
///
/// With `cooperative`, each attempt instead looks the email up and verifies the password on the calling task,
/// unbounded: where hashes ran before the hashing pool, so a run shows what the bound buys.
final class PasswordFlood: Sendable {
    /// What the flood did.
    struct Outcome: Sendable {
        var offeredPerSecond: Double
        var seconds: Double
        /// Attempts hashed and answered UNAUTHENTICATED.
        var checked: Int
        /// Attempts refused RESOURCE_EXHAUSTED before any hash.
        var refused: Int
        /// Attempts that failed otherwise.
        var failed: Int
        var hashers: Int
        var queue: Int
        var hashing: String

        var summaryLine: String {
            "password_flood: offered \(Int(offeredPerSecond.rounded()))/s for \(Int(seconds.rounded())) s "
                + "(\(hashing) hashing, \(hashers) hashers, queue \(queue)): "
                + "\(Int((Double(checked) / max(seconds, 0.001)).rounded()))/s checked, "
                + "\(Int((Double(refused) / max(seconds, 0.001)).rounded()))/s refused, \(failed) failed"
        }

        var jsonObject: String {
            "{\"offered_per_second\":\((offeredPerSecond * 10).rounded() / 10),\"seconds\":\((seconds * 10).rounded() / 10),"
                + "\"checked\":\(checked),\"refused\":\(refused),\"failed\":\(failed),\"hashers\":\(hashers),"
                + "\"queue\":\(queue),\"hashing\":\"\(hashing)\"}"
        }
    }

    private let service: IdentityDependencies
    private let player: any IdentityV1.IdentityHandler
    private let rate: Double
    private let cooperative: Bool
    private let loops: [EventLoop]
    private let appID: String
    private let counts = Mutex<(checked: Int, refused: Int, failed: Int)>((0, 0, 0))
    private let running = Mutex<(task: Task<Void, Never>, start: ContinuousClock.Instant)?>(nil)
    /// Set by `stop()`: no new attempts (a flag, not cancellation, which would cancel the attempts in flight).
    private let stopping = Atomic<Bool>(false)

    init(
        service: IdentityDependencies, player: any IdentityV1.IdentityHandler, rate: Double, cooperative: Bool,
        loops: [EventLoop], appID: String
    ) {
        self.service = service
        self.player = player
        self.rate = max(1, rate)
        self.cooperative = cooperative
        self.loops = loops
        self.appID = appID
    }

    func start() {
        let interval = Duration.nanoseconds(Int64(1e9 / rate))
        let task = Task { [self] in
            await withDiscardingTaskGroup { group in
                var next = ContinuousClock.now
                var index = 0
                while true {
                    next += interval
                    try? await Task.sleep(until: next, clock: .continuous)
                    guard !stopping.load(ordering: .relaxed) else { break }
                    index += 1
                    let attempt = index
                    group.addTask { await self.attempt(attempt) }
                }
            }
        }
        running.withLock { $0 = (task, .now) }
    }

    /// Stops offering, waits for the attempts in flight, and returns the counts.
    func stop() async -> Outcome {
        guard let (task, start) = running.withLock({ $0 }) else { preconditionFailure("stop() before start()") }
        stopping.store(true, ordering: .relaxed)
        let elapsed = ContinuousClock.now - start
        await task.value
        let (checked, refused, failed) = counts.withLock { $0 }
        return Outcome(
            offeredPerSecond: rate, seconds: Double(elapsed / .milliseconds(1)) / 1000, checked: checked,
            refused: refused, failed: failed, hashers: service.passwordHashingThreads,
            queue: service.passwordQueueLimit,
            hashing: cooperative ? "cooperative" : "pool")
    }

    private func attempt(_ index: Int) async {
        let email = "flood-\(index)-\(UUID().uuidString.prefix(8))@example.com"
        let address = "10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)"
        do {
            try await IdentityBenchmark.onLoop(of: loops, index: index) { [self] in
                if cooperative {
                    try await service.failPasswordLoginOnCallingThread(email: email)
                }
                var context = IdentityBenchmark.context(caller: nil)
                context.metadata["rave-client-address"] = address
                _ = try await player.loginWithPassword(
                    .init(
                        appId: appID, device: .init(deviceId: "flood-\(index)"), email: email,
                        password: "not the password"),
                    context: context)
            }
            counts.withLock { $0.failed += 1 }
        } catch {
            // Identity's own error type is internal to it: read the status every client would receive.
            switch RPCError(mapping: error, requestID: "").code {
            case .unauthenticated: counts.withLock { $0.checked += 1 }
            case .resourceExhausted: counts.withLock { $0.refused += 1 }
            default: counts.withLock { $0.failed += 1 }
            }
        }
    }
}
