import Foundation
import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import Testing

@testable import Gifts

/// The gifts service on a fresh migrated database, reaching identity and social stand-ins over real mTLS;
/// handlers are called in-process with the request contexts the gateway would build.
struct GiftsHarness {
    let dependencies: GiftsDependencies
    let peers: PeerHarness
    let pool: PostgresPool
    let app: RaveID

    var player: PlayerHandlers { PlayerHandlers(dependencies: dependencies) }
    var install: InstallHandlers { InstallHandlers(dependencies: dependencies) }
    var admin: AdminHandlers { AdminHandlers(dependencies: dependencies) }
    var merge: GiftsMergeParticipant { GiftsMergeParticipant(dependencies: dependencies) }
    var identity: StandInIdentity { peers.identity }
    var social: StandInSocial { peers.social }

    /// Runs `body` against a fresh database and peers, torn down afterwards.
    static func with(_ body: (GiftsHarness) async throws -> Void) async throws {
        let peers = try PeerHarness()
        do {
            try await TestDatabase.withPool { pool in
                let service = GiftsDependencies(
                    pool: pool, directory: peers.directory, logger: Logger(label: "gifts-test", level: .critical))
                try await body(GiftsHarness(dependencies: service, peers: peers, pool: pool, app: RaveID.random()))
            }
        } catch {
            await peers.shutdown()
            throw error
        }
        await peers.shutdown()
    }

    /// A player's call through the gateway.
    func context(_ user: RaveID, metadata: [String: String] = [:]) -> RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: metadata,
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gateway"),
            caller: Caller(userID: user.hex, appID: app.hex, sessionID: "s", scopes: [Caller.playerScope]),
            logger: Logger(label: "test", level: .critical))
    }

    /// An operator's call.
    var adminContext: RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gateway"),
            caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]),
            logger: Logger(label: "test", level: .critical))
    }

    /// Another backend service's call (mTLS, no caller).
    var serviceContext: RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "identity"), caller: nil,
            logger: Logger(label: "test", level: .critical))
    }

    /// A call with no caller at all, as the gateway forwards the install methods.
    var anonymousContext: RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gateway"), caller: nil,
            logger: Logger(label: "test", level: .critical))
    }

    @discardableResult
    func createType(
        _ key: String = "life", requestable: Bool = true, dailyLimit: UInt32 = 0, expirySeconds: Int64 = 0
    ) async throws -> GiftsV1.GiftType {
        let created = try await admin.createGiftType(
            .init(
                appId: app.hex,
                giftType: .init(
                    key: key, name: key.capitalized, imageUrl: "https://img/\(key).png", requestable: requestable,
                    expirySeconds: expirySeconds, dailyLimitPerSender: dailyLimit)),
            context: adminContext)
        return try #require(created.giftType)
    }

    func send(
        _ key: String = "life", from sender: RaveID, to recipients: [RaveID], idempotencyKey: String? = nil
    ) async throws -> GiftsV1.SendGiftsResponse {
        try await player.sendGifts(
            .init(
                giftTypeKey: key, recipientIds: recipients.map(\.hex),
                idempotencyKey: idempotencyKey ?? RaveID.random().hex),
            context: context(sender))
    }

    /// The one gift `recipient` has pending.
    func onlyPendingGift(of recipient: RaveID) async throws -> GiftsV1.Gift {
        let listed = try await player.listGifts(.init(), context: context(recipient))
        try #require(listed.gifts.count == 1)
        return listed.gifts[0]
    }

    /// Outbox events of `topic`, oldest first, as (key, payload).
    func outbox(_ topic: String) async throws -> [(key: String, payload: [UInt8])] {
        try await pool.query("SELECT key, payload FROM outbox_events WHERE topic = $1 ORDER BY id", [topic]).map {
            (try $0.decode(String.self, column: "key"), try $0.decode([UInt8].self, column: "payload"))
        }
    }

    /// The "gifts.gifts_sent" events, oldest first, with their keys (the senders).
    func sentEvents() async throws -> [(key: String, event: GiftsV1.GiftsSentEvent)] {
        try await outbox(EventTopic.giftsSent).map { ($0.key, try GiftsV1.GiftsSentEvent(protobufBytes: $0.payload)) }
    }

    func count(_ sql: String, _ parameters: [(any PostgresEncodable)?] = []) async throws -> Int {
        try await pool.query(sql, parameters).first?.decode(Int.self, at: 0) ?? 0
    }
}

/// True when `error` is an RPC failure with `code` (as the RPC layer maps it).
func hasStatus(_ error: any Error, _ code: StatusCode) -> Bool {
    if let error = error as? GiftsError { return error.code == code }
    if let error = error as? RPCError { return error.code == code }
    return false
}
