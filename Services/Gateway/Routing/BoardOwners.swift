import Foundation
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import Synchronization

/// Which leaderboards instance owns each board (DESIGN.md §8), so a board's calls go to its owner.
///
/// Filled from `LeaderboardsInternal/ListBoardOwners` of any healthy leaderboards backend every `interval`, and
/// at once when a call comes back with `NotBoardOwner` (whose named owner is used meanwhile). Unknown boards
/// and owners that are not healthy fall back to round robin: the instance asked then refuses with
/// `NotBoardOwner` (not processed) and the call is sent once more, to the owner it names.
final class BoardOwners: Service {
    /// A board: the caller's application and the leaderboard key.
    struct Board: Hashable, Sendable {
        var appID: String
        var key: String
    }

    private struct Owner {
        var address: SocketAddress
        var expiresUnixMilliseconds: Int64
    }

    /// The service whose calls are routed by board.
    static let service = "leaderboards"
    static let listMethod = "rave.leaderboards.v1.LeaderboardsInternal/ListBoardOwners"
    /// How long an owner named by a refusal is used before the next listing confirms it.
    static let refusalMemoryMilliseconds: Int64 = 5000

    let name = "board-owners"
    private let pool: BackendPool
    private let interval: Duration
    private let logger: Logger
    private let owners = Mutex<[Board: Owner]>([:])
    private let refreshRequested = Atomic<Bool>(false)
    private let latch = ShutdownLatch()

    init(pool: BackendPool, interval: Duration = .seconds(3), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    /// The owner's address of `board`, when a lease that has not expired names one.
    func owner(of board: Board, nowUnixMilliseconds: Int64 = unixMilliseconds()) -> SocketAddress? {
        owners.withLock { owners in
            guard let owner = owners[board], owner.expiresUnixMilliseconds > nowUnixMilliseconds else { return nil }
            return owner.address
        }
    }

    /// Replaces every known owner with a listing's (addresses that do not parse are left out).
    func replace(with listing: LeaderboardsV1.ListBoardOwnersResponse) {
        var fresh: [Board: Owner] = [:]
        for lease in listing.owners {
            guard let address = SocketAddress(parsing: lease.address) else { continue }
            fresh[Board(appID: lease.appId, key: lease.leaderboardKey)] = Owner(
                address: address, expiresUnixMilliseconds: lease.expiresUnixMs)
        }
        owners.withLock { $0 = fresh }
    }

    /// The owner a `NotBoardOwner` refusal names, or nil when `error` is no such refusal.
    ///
    /// The named owner is remembered at once (briefly) and a fresh listing is asked for.
    func ownerNamed(by error: RPCError, nowUnixMilliseconds: Int64 = unixMilliseconds()) -> SocketAddress? {
        guard let refusal = Self.refusal(in: error), let address = SocketAddress(parsing: refusal.address) else {
            return nil
        }
        owners.withLock {
            $0[Board(appID: refusal.appId, key: refusal.leaderboardKey)] = Owner(
                address: address, expiresUnixMilliseconds: nowUnixMilliseconds + Self.refusalMemoryMilliseconds)
        }
        refreshRequested.store(true, ordering: .relaxed)
        return address
    }

    /// The `NotBoardOwner` detail of an UNAVAILABLE, not processed status, if it carries one.
    static func refusal(in error: RPCError) -> LeaderboardsV1.NotBoardOwner? {
        guard error.code == .unavailable, error.notProcessed, !error.details.isEmpty,
            let refusal = try? LeaderboardsV1.NotBoardOwner(protobufBytes: error.details), !refusal.address.isEmpty
        else { return nil }
        return refusal
    }

    /// Asks one healthy leaderboards backend for every lease; keeps what is known when none answers.
    func refresh() async {
        do {
            let bytes = try await ServiceCaller(pool: pool).call(
                method: Self.listMethod, request: LeaderboardsV1.ListBoardOwnersRequest().protobufBytes(),
                options: CallOptions(timeout: .seconds(1), maxRetries: 0))
            replace(with: try LeaderboardsV1.ListBoardOwnersResponse(protobufBytes: bytes))
        } catch {
            logger.debug("listing the board owners failed", [("error", "\(error)")])
        }
    }

    /// The board of a leaderboards request from a caller of `appID`, when the request names one.
    func routing(request: [UInt8], appID: String) -> BoardRouting? {
        guard let key = Self.leaderboardKey(in: request) else { return nil }
        return BoardRouting(owners: self, board: Board(appID: appID, key: key))
    }

    func run() async throws {
        while !latch.isOpen {
            refreshRequested.store(false, ordering: .relaxed)
            await refresh()
            let next = ContinuousClock.now + interval
            // Polls so that a refusal's refresh request is served within a few tens of milliseconds.
            while !latch.isOpen && !refreshRequested.load(ordering: .relaxed) && ContinuousClock.now < next {
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    func shutdown() async {
        latch.open()
    }

    /// The `leaderboard_key` of a board-keyed leaderboards request: field 1 when it is length-delimited and
    /// UTF-8, read with a scan of the wire format (no decode of the message).
    static func leaderboardKey(in request: [UInt8]) -> String? {
        var index = 0
        while index < request.count {
            guard let tag = varint(in: request, at: &index) else { return nil }
            switch tag & 7 {
            case 0:
                guard varint(in: request, at: &index) != nil else { return nil }
            case 1:
                index += 8
            case 5:
                index += 4
            case 2:
                guard let length = varint(in: request, at: &index), length <= UInt64(request.count - index) else {
                    return nil
                }
                let end = index + Int(length)
                if tag >> 3 == 1 {
                    return String(validating: request[index..<end], as: UTF8.self).flatMap { $0.isEmpty ? nil : $0 }
                }
                index = end
            default:
                return nil
            }
        }
        return nil
    }

    private static func varint(in bytes: [UInt8], at index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count && shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}

/// Milliseconds since 1970, the clock of lease expiries.
func unixMilliseconds() -> Int64 {
    Int64(Date().timeIntervalSince1970 * 1000)
}

/// One call's board and the cache that knows its owner.
struct BoardRouting: Sendable {
    let owners: BoardOwners
    let board: BoardOwners.Board

    /// The owner to try first, when known.
    var owner: SocketAddress? { owners.owner(of: board) }
}
