import Foundation
import RaveMessages
import RaveRPC
import RaveTransport
import Testing

@testable import Gateway
@testable import Identity

/// `GatewayAdmin/GetSystemStatus` (docs/gateway.md, "System status"): the per-service window of forwarded calls
/// without sockets, then the method on real mTLS in front of the real identity service, for the admin certificate
/// and an operator, and refused to players and to callers without a credential.
@Suite("Gateway system status", .timeLimit(.minutes(3)))
struct GatewaySystemStatusTests {
    static let second: UInt64 = 1_000_000_000
    static let millisecond: UInt64 = 1_000_000

    /// Milliseconds as bucket bounds give them (seconds × 1000 in binary floating point).
    static func close(_ value: Double?, _ expected: Double) -> Bool { abs((value ?? -1) - expected) < 1e-9 }

    @Test func trafficCountsCallsAndServiceErrorsOverTheLastMinute() throws {
        let start = 1000 * Self.second
        let traffic = ServiceTraffic(services: ["identity", "wallet"], now: start)
        for index in 0..<98 {
            traffic.record(
                service: "identity", code: .ok, nanoseconds: 2 * Self.millisecond,
                now: start + UInt64(index % 30) * Self.second)
        }
        // A refusal of the caller's request is not the service's error; UNAVAILABLE is.
        traffic.record(service: "identity", code: .notFound, nanoseconds: 3 * Self.millisecond, now: start)
        traffic.record(service: "identity", code: .unavailable, nanoseconds: 300 * Self.millisecond, now: start)
        traffic.record(service: "nowhere", code: .ok, nanoseconds: Self.millisecond, now: start)

        let now = start + 30 * Self.second
        let identity = try #require(traffic.figures(service: "identity", now: now))
        #expect(identity.calls == 100)
        #expect(identity.errors == 1)
        #expect(Self.close(identity.p99Milliseconds, 5), "99 of 100 calls took at most 5 ms (the 3 ms one's bucket)")
        #expect(
            traffic.figures(service: "wallet", now: now)
                == ServiceTraffic.Figures(calls: 0, errors: 0, p99Milliseconds: 0))
        #expect(traffic.figures(service: "nowhere", now: now) == nil, "a service the gateway does not route")
        #expect(traffic.windowSeconds(now: now) == 31, "less than a minute since the gateway started")

        // A minute on, the first second (with the slow failure) has left the window.
        let later = start + 60 * Self.second
        let figures = try #require(traffic.figures(service: "identity", now: later))
        #expect(figures.calls == 94, "the calls of seconds 1…29 remain")
        #expect(figures.errors == 0)
        #expect(traffic.windowSeconds(now: later) == 60)
        #expect(traffic.figures(service: "identity", now: start + 200 * Self.second)?.calls == 0)
    }

    @Test func theSlowestPercentIsTheP99() {
        let traffic = ServiceTraffic(services: ["push"], now: 0)
        for _ in 0..<99 { traffic.record(service: "push", code: .ok, nanoseconds: 200_000, now: 5 * Self.second) }
        traffic.record(service: "push", code: .ok, nanoseconds: 20 * Self.second, now: 5 * Self.second)
        #expect(Self.close(traffic.figures(service: "push", now: 5 * Self.second)?.p99Milliseconds, 0.25))
        traffic.record(service: "push", code: .ok, nanoseconds: 20 * Self.second, now: 5 * Self.second)
        #expect(
            Self.close(traffic.figures(service: "push", now: 5 * Self.second)?.p99Milliseconds, 10_000), "beyond 10 s")
    }

    @Test func getSystemStatusShowsForwardedCallsToAdminsAndOperatorsOnly() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await GatewayOperatorTests.connect(stack, certificate: "admin")
            let others = try await GatewayOperatorTests.connect(stack)
            defer {
                admin.close()
                others.close()
            }
            let (publisher, _) = try await GatewayOperatorTests.fixture(stack, admin: admin)
            let admins = IdentityV1.IdentityAdminClient(caller: admin)
            for _ in 0..<3 { _ = try await admins.getApplication(.init(appId: stack.appID)) }
            await #expect(throws: RPCError.self) {
                _ = try await admins.getApplication(.init(appId: String(repeating: "0", count: 32)))
            }

            let status = try await GatewayV1.GatewayAdminClient(caller: admin).getSystemStatus(.init())
            let identity = try #require(status.services.first { $0.service == "identity" })
            // The fixture's two calls, three reads and the NOT_FOUND; the status call itself is not forwarded.
            #expect(identity.calls >= 6)
            #expect(identity.errors == 0, "NOT_FOUND is the caller's, not the service's")
            #expect(identity.backends == 1 && identity.healthyBackends == 1)
            #expect(identity.p99Ms > 0)
            #expect(identity.callsPerSecond == Double(identity.calls) / Double(status.windowSeconds))
            #expect((1...60).contains(status.windowSeconds))
            #expect(abs(Double(status.atUnixMs) - Date().timeIntervalSince1970 * 1000) < 60_000)
            #expect(status.services.map(\.service) == status.services.map(\.service).sorted())

            let viewer = try await GatewayOperatorTests.operatorTokens(
                stack, admin: admin, email: "status-viewer@example.com", role: .viewer, publisherID: publisher)
            let seen = try await GatewayV1.GatewayAdminClient(caller: others).getSystemStatus(
                .init(), options: GatewayOperatorTests.options(viewer.accessToken))
            #expect(seen.services.contains { $0.service == "identity" }, "a viewer reads it without a reason")

            let player = try await IdentityV1.IdentityClient(caller: others).guestLogin(
                .init(appId: stack.appID, device: .init(deviceId: "status-player")))
            guard case .tokens(let playerTokens) = player.outcome else {
                Issue.record("the guest login answered no tokens")
                return
            }
            let refusals = [
                GatewayOperatorTests.options(playerTokens.accessToken),
                CallOptions(timeout: .seconds(5), maxRetries: 0),
            ]
            for options in refusals {
                let refused = await #expect(throws: RPCError.self) {
                    _ = try await GatewayV1.GatewayAdminClient(caller: others).getSystemStatus(
                        .init(), options: options)
                }
                #expect(refused?.code == .permissionDenied)
            }
        }
    }
}
