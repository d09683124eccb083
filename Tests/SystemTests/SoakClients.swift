import Foundation
import RaveMessages
import RaveRPC
import Synchronization

/// A client's gateway connection that the soak may drop at any moment: `drop()` closes the current client (its
/// in-flight calls fail) and installs a fresh one, as a phone losing its network would.
final class DroppableConnection: Sendable {
    private let make: @Sendable () throws -> RPCClient
    private let current: Mutex<RPCClient>

    init(_ make: @escaping @Sendable () throws -> RPCClient) throws {
        self.make = make
        current = Mutex(try make())
    }

    var client: RPCClient { current.withLock { $0 } }

    func drop() throws {
        let fresh = try make()
        let old = current.withLock { client in
            defer { client = fresh }
            return client
        }
        old.close()
    }

    func close() {
        current.withLock { $0.close() }
    }
}

/// A player's calls over a droppable connection, with their access token; every status is tallied.
struct SoakCaller: RPCCaller {
    let connection: DroppableConnection
    let accessToken: String
    let tally: StatusTally

    func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        var options = options
        options.timeout = .seconds(5)
        if !accessToken.isEmpty { options.metadata["authorization"] = "Bearer \(accessToken)" }
        do {
            let response = try await connection.client.call(method: method, request: request, options: options)
            tally.count(.ok)
            return response
        } catch {
            tally.count(error.code)
            throw error
        }
    }

    func signedIn(_ login: IdentityV1.LoginResponse) -> SoakCaller {
        guard case .tokens(let tokens)? = login.outcome else { return self }
        return SoakCaller(connection: connection, accessToken: tokens.accessToken, tally: tally)
    }

    var identity: IdentityV1.IdentityClient { IdentityV1.IdentityClient(caller: self) }
    var leaderboards: LeaderboardsV1.LeaderboardsClient { LeaderboardsV1.LeaderboardsClient(caller: self) }
    var wallet: WalletV1.WalletClient { WalletV1.WalletClient(caller: self) }
    var gifts: GiftsV1.GiftsClient { GiftsV1.GiftsClient(caller: self) }
}

/// How many calls ended with each status, while the load ran (what clients saw).
final class StatusTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let active = Atomic<Bool>(true)

    func count(_ code: StatusCode) {
        guard active.load(ordering: .relaxed) else { return }
        counts.withLock { $0["\(code)", default: 0] += 1 }
    }

    /// Stops counting: the checks afterwards are not part of what clients saw under failure.
    func stop() { active.store(false, ordering: .relaxed) }

    var snapshot: [String: Int] { counts.withLock { $0 } }
}
