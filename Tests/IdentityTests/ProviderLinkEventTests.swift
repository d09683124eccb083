import Foundation
import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Identity

@Suite("identity.provider_linked events")
struct ProviderLinkEventTests {
    typealias Harness = IdentityHarness

    /// Over real mTLS: a first provider login, a ConnectProvider and a merge that moves a link each publish one
    /// event, and the sink (which fails its first call) ends up with each exactly once.
    @Test func everyNewLinkReachesTheSinkOnce() async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-events-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "gifts"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let sink = RecordingSink(failures: 1)
        let server = RPCServer(
            services: [sink], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/gifts.pem", privateKeyPath: "\(certificates)/gifts-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: Harness.group, logger: Logger(label: "sink", level: .warning))
        try server.start()

        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            // A first login with Google links it to a new user.
            let account = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .google, token: try providers.token(.google, subject: "g1"))
            // ConnectProvider links Apple to that user.
            _ = try await harness.player.connectProvider(
                .init(provider: .apple, idToken: try providers.token(.apple, subject: "a1")),
                context: Harness.playerContext(account, appID: app.appId))
            // A second account with Facebook, merged into the first by connecting Google: Facebook moves over.
            let other = try await harness.providerLogin(
                appID: app.appId, deviceID: "d2", provider: .facebook,
                token: try providers.token(.facebook, subject: "f1"))
            let merged = try await harness.player.connectProvider(
                .init(provider: .google, idToken: try providers.token(.google, subject: "g1")),
                context: Harness.playerContext(other, appID: app.appId))
            guard case .merged = merged.outcome else {
                Issue.record("expected a merge, got \(String(describing: merged.outcome))")
                return
            }

            let events = EventSinks(
                addresses: [EventSinkAddress(name: "gifts", host: "127.0.0.1", port: server.localPort)],
                source: "identity", tls: try Harness.identityClientTLS(certificates: certificates),
                group: Harness.group, logger: Logger(label: "sinks", level: .critical))
            let delivery = try harness.participantDelivery(certificates: certificates, events: events)
            let running = Task { try await delivery.run() }
            let deadline = ContinuousClock.now + .seconds(20)
            while sink.linked.count < 4, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            // Anything still in flight would show up as a duplicate by now.
            try await Task.sleep(for: .milliseconds(200))
            await delivery.shutdown()
            try await running.value

            let target = account.userID
            let expected: Set<LinkedSubject> = [
                LinkedSubject(userID: target, provider: .google, subject: "g1"),
                LinkedSubject(userID: target, provider: .apple, subject: "a1"),
                LinkedSubject(userID: other.userID, provider: .facebook, subject: "f1"),
                LinkedSubject(userID: target, provider: .facebook, subject: "f1"),
            ]
            #expect(Set(sink.linked) == expected)
            #expect(sink.linked.count == expected.count)
            #expect(sink.deliveredWithDuplicates > sink.linked.count)
            #expect(sink.sourcesAndApps.allSatisfy { $0 == ("identity", app.appId) })
            #expect(sink.callersWereServices)
        }
        await server.shutdown()
    }
}

/// A provider link as an event told it.
struct LinkedSubject: Hashable, Sendable {
    var userID: String
    var provider: IdentityV1.Provider
    var subject: String
}

/// An event sink that fails its first calls, then records each `identity.provider_linked` event once by event id.
final class RecordingSink: EventsV1.EventSinkHandler {
    private struct State {
        var failuresLeft: Int
        var seen: Set<String> = []
        var linked: [LinkedSubject] = []
        var deliveries = 0
        var sourcesAndApps: [(String, String)] = []
        var callersWereServices = true
    }

    private let state: Mutex<State>

    init(failures: Int) {
        state = Mutex(State(failuresLeft: failures))
    }

    var linked: [LinkedSubject] { state.withLock { $0.linked } }
    /// Provider-linked events received, counting redeliveries.
    var deliveredWithDuplicates: Int { state.withLock { $0.deliveries } }
    var sourcesAndApps: [(String, String)] { state.withLock { $0.sourcesAndApps } }
    var callersWereServices: Bool { state.withLock { $0.callersWereServices } }

    func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        let decoded = try request.events.filter { $0.topic == EventTopic.providerLinked }.map {
            ($0, try IdentityV1.ProviderLinkedEvent(protobufBytes: $0.payload))
        }
        try state.withLock { state throws(RPCError) in
            state.callersWereServices = state.callersWereServices && context.peer.role == .service("identity")
            state.deliveries += decoded.count
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw RPCError.unavailable("the sink is still starting")
            }
            for (event, linked) in decoded where state.seen.insert(event.eventId).inserted {
                state.linked.append(
                    LinkedSubject(userID: linked.userId, provider: linked.provider, subject: linked.subject))
                state.sourcesAndApps.append((event.source, linked.appId))
            }
        }
        return EventsV1.DeliverEventsResponse()
    }
}
