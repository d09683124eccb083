import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

@testable import Gifts

/// Identity's internal methods as gifts calls them, answered from memory: users, merges and provider links.
///
/// Serves only those methods rather than conforming to `IdentityInternalHandler`, so identity growing its
/// internal API does not break these tests; the method names and messages are the generated ones.
final class StandInIdentity: RPCService {
    static let serviceName = IdentityV1.IdentityInternalClient.serviceName

    private struct State {
        var names: [RaveID: String] = [:]
        var mergedInto: [RaveID: RaveID] = [:]
        var links: [ExternalSubject: RaveID] = [:]
    }

    private let state = Mutex(State())

    /// A new player with a display name.
    func addUser(named name: String = "Player") -> RaveID {
        let id = RaveID.random()
        state.withLock { $0.names[id] = name }
        return id
    }

    func link(_ subject: ExternalSubject, to user: RaveID) {
        state.withLock { $0.links[subject] = user }
    }

    func merge(_ source: RaveID, into target: RaveID) {
        state.withLock { $0.mergedInto[source] = target }
    }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/ResolveUsers") { bytes, context in
                let request = try IdentityV1.ResolveUsersRequest(protobufBytes: bytes)
                let users = self.state.withLock { state in
                    request.userIds.map { text -> IdentityV1.ResolvedUser in
                        guard let id = RaveID(text) else { return IdentityV1.ResolvedUser(requestedId: text) }
                        let canonical = state.mergedInto[id] ?? id
                        let known = state.names[canonical] != nil
                        return IdentityV1.ResolvedUser(requestedId: text, canonicalId: known ? canonical.hex : "")
                    }
                }
                return IdentityV1.ResolveUsersResponse(users: users).protobufBytes()
            },
            RPCMethod(name: "\(Self.serviceName)/GetUsers") { bytes, context in
                let request = try IdentityV1.GetUsersRequest(protobufBytes: bytes)
                let names = self.state.withLock { $0.names }
                let users = request.userIds.compactMap { text in
                    RaveID(text).flatMap { id in
                        names[id].map { IdentityV1.UserProfile(userId: id.hex, displayName: $0) }
                    }
                }
                return IdentityV1.GetUsersResponse(users: users).protobufBytes()
            },
            RPCMethod(name: "\(Self.serviceName)/LookupExternal") { bytes, context in
                let request = try IdentityV1.LookupExternalRequest(protobufBytes: bytes)
                let links = self.state.withLock { $0.links }
                let matches = request.subjects.compactMap { subject in
                    links[ExternalSubject(provider: subject.provider.rawValue, subject: subject.subject)].map {
                        IdentityV1.ExternalMatch(key: .subject(subject), userId: $0.hex)
                    }
                }
                return IdentityV1.LookupExternalResponse(matches: matches).protobufBytes()
            },
        ]
    }
}

/// Social's `IsBlocked` answered from memory, counting calls.
final class StandInSocial: RPCService {
    static let serviceName = SocialV1.SocialInternalClient.serviceName

    private struct Pair: Hashable {
        var blocker: String
        var blocked: String
    }

    private let blocks = Mutex<Set<Pair>>([])

    func block(_ blocked: RaveID, by blocker: RaveID) {
        blocks.withLock { _ = $0.insert(Pair(blocker: blocker.hex, blocked: blocked.hex)) }
    }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/IsBlocked") { bytes, context in
                let request = try SocialV1.IsBlockedRequest(protobufBytes: bytes)
                let (forward, backward) = self.blocks.withLock { blocks in
                    (
                        blocks.contains(Pair(blocker: request.userId, blocked: request.otherUserId)),
                        blocks.contains(Pair(blocker: request.otherUserId, blocked: request.userId))
                    )
                }
                return SocialV1.IsBlockedResponse(
                    blocked: forward || backward, userBlockedOther: forward, otherBlockedUser: backward
                ).protobufBytes()
            }
        ]
    }
}

/// A push-like event sink that records what gifts' publisher delivers.
final class RecordingSink: EventsV1.EventSinkHandler {
    private let events = Mutex<[EventsV1.Event]>([])

    var received: [EventsV1.Event] { events.withLock { $0 } }

    func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        events.withLock { $0.append(contentsOf: request.events) }
        return EventsV1.DeliverEventsResponse(handled: UInt32(request.events.count))
    }
}

/// Identity and social stand-ins (and an event sink) behind one real mTLS server on 127.0.0.1, and an mTLS client presenting the
/// gifts certificate, as production wires them.
final class PeerHarness: Sendable {
    let identity = StandInIdentity()
    let social = StandInSocial()
    let sink = RecordingSink()
    let client: RPCClient
    let certificates: String
    private let server: RPCServer
    private let ownsCertificates: Bool

    /// `certificates` is a directory that already holds a CA and "gifts" and "identity" certificates (shared with a
    /// service runtime); without it the harness writes its own.
    init(certificates: String? = nil) throws {
        ownsCertificates = certificates == nil
        self.certificates =
            certificates
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("rave-gifts-peers-\(UUID())").path
        if ownsCertificates {
            try DevelopmentCertificates.write(to: self.certificates, services: ["gifts", "identity"])
        }
        let directory = self.certificates
        server = RPCServer(
            services: [identity, social, sink], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/identity.pem", privateKeyPath: "\(directory)/identity-key.pem",
                    trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: true)),
            group: TestDatabase.group, logger: Logger(label: "peers", level: .critical))
        try server.start()
        client = RPCClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gifts.pem",
                    privateKeyPath: "\(directory)/gifts-key.pem")),
            group: TestDatabase.group, logger: Logger(label: "peers.client", level: .critical))
    }

    /// The port both stand-ins answer on.
    var port: Int { server.localPort }

    /// The production directory, reaching the stand-ins over mTLS.
    var directory: PeerDirectory {
        PeerDirectory(identity: client, social: client, logger: Logger(label: "directory", level: .critical))
    }

    func shutdown() async {
        client.close()
        await server.shutdown()
        if ownsCertificates { try? FileManager.default.removeItem(atPath: certificates) }
    }
}
