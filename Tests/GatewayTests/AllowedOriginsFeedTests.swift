import Foundation
import RaveMessages
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import Synchronization
import Testing

@testable import Gateway

/// The allowed web origins the gateway reads from identity for CORS (`Auth/AllowedOriginsFeed`): through the
/// gateway's own identity `ServiceCaller`, over mTLS, against the identity stand-in.
@Suite("Allowed origins feed")
struct AllowedOriginsFeedTests {
    /// What `onUpdate` was handed, in order.
    final class Updates: Sendable {
        let received = Mutex<[Set<String>]>([])
        func record(_ origins: Set<String>) { received.withLock { $0.append(origins) } }
        var all: [Set<String>] { received.withLock { $0 } }
    }

    static func feed(
        _ harness: GatewayHarness, _ updates: Updates, interval: Duration = .seconds(10)
    )
        throws -> AllowedOriginsFeed
    {
        let pool = try #require(harness.runtime.pipeline.pools["identity"])
        return AllowedOriginsFeed(
            identity: ServiceCaller(pool: pool), interval: interval,
            logger: Logger(label: "test.allowed-origins", level: .critical), onUpdate: updates.record)
    }

    @Test func theFirstSetAndEveryChangeReachOnUpdateOnce() async throws {
        let harness = try await GatewayHarness.start()
        let updates = Updates()
        let feed = try Self.feed(harness, updates)
        #expect(feed.origins == nil)
        harness.identity.allowedOrigins.withLock { $0 = ["https://a.example", "http://localhost:5173"] }
        #expect(await feed.poll())
        #expect(updates.all == [["https://a.example", "http://localhost:5173"]])
        // Nothing new: nothing handed over.
        #expect(await feed.poll())
        #expect(updates.all.count == 1)
        harness.identity.allowedOrigins.withLock { $0 = ["https://b.example"] }
        #expect(await feed.poll())
        #expect(updates.all == [["https://a.example", "http://localhost:5173"], ["https://b.example"]])
        #expect(feed.origins == ["https://b.example"])
        try await harness.stop()
    }

    @Test func theLastSetStaysWhileIdentityCannotBeRead() async throws {
        let harness = try await GatewayHarness.start()
        let updates = Updates()
        let feed = try Self.feed(harness, updates)
        harness.identity.allowedOrigins.withLock { $0 = ["https://a.example"] }
        #expect(await feed.poll())
        harness.identity.allowedOriginsDown.store(true, ordering: .relaxed)
        harness.identity.allowedOrigins.withLock { $0 = [] }
        #expect(await feed.poll() == false)
        #expect(await feed.poll() == false)
        #expect(feed.origins == ["https://a.example"])
        #expect(updates.all == [["https://a.example"]])
        // Readable again: an empty list is a list like any other.
        harness.identity.allowedOriginsDown.store(false, ordering: .relaxed)
        #expect(await feed.poll())
        #expect(updates.all == [["https://a.example"], []])
        try await harness.stop()
    }

    @Test func runReadsUntilShutdown() async throws {
        let harness = try await GatewayHarness.start()
        let updates = Updates()
        let feed = try Self.feed(harness, updates, interval: .milliseconds(50))
        harness.identity.allowedOrigins.withLock { $0 = ["https://a.example"] }
        let running = Task { try await feed.run() }
        try await eventually { updates.all == [["https://a.example"]] }
        harness.identity.allowedOrigins.withLock { $0 = ["https://a.example", "https://b.example"] }
        try await eventually { updates.all.last == ["https://a.example", "https://b.example"] }
        await feed.shutdown()
        try await running.value
        try await harness.stop()
    }
}
