import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import Synchronization

/// The web origins some application allows (`ApplicationSettings.allowed_origins`), read from identity with
/// `IdentityInternal/ListAllowedOrigins` every `interval` (10 s) and handed to `onUpdate`, for the HTTP/JSON front
/// door's CORS checks (docs/gateway.md, "CORS").
///
/// `onUpdate` hears the first set read and every change after it, never the same set twice in a row. While identity
/// cannot be read the last set stays in force (nothing is handed over, and a warning is logged once per outage):
/// an operator's list changes rarely, and refusing every browser because identity is briefly away would do more
/// harm than serving a list up to one outage old. Before the first successful read there is no set; the front door
/// then allows only its own origin.
final class AllowedOriginsFeed: Service {
    let name = "allowed-origins"
    private let identity: IdentityV1.IdentityInternalClient
    private let interval: Duration
    private let logger: Logger
    private let onUpdate: @Sendable (Set<String>) -> Void
    private let latch = ShutdownLatch()

    private struct State {
        var origins: Set<String>?
        var failing = false
    }

    private let state = Mutex(State())

    /// The default time between reads.
    static let defaultInterval = Duration.seconds(10)

    init(
        identity: any RPCCaller, interval: Duration = AllowedOriginsFeed.defaultInterval, logger: Logger,
        onUpdate: @escaping @Sendable (Set<String>) -> Void
    ) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.interval = interval
        self.logger = logger
        self.onUpdate = onUpdate
    }

    /// The origins read last; nil until the first read succeeded.
    var origins: Set<String>? { state.withLock { $0.origins } }

    /// Reads the origins once; true when identity answered.
    @discardableResult
    func poll() async -> Bool {
        let origins: Set<String>
        do {
            let response = try await identity.listAllowedOrigins(
                IdentityV1.ListAllowedOriginsRequest(), options: CallOptions(timeout: .seconds(5)))
            origins = Set(response.origins)
        } catch {
            let first = state.withLock { state in
                defer { state.failing = true }
                return !state.failing
            }
            if first {
                logger.warning(
                    "reading the allowed origins from identity failed; keeping the last ones",
                    [("error", error.message)])
            }
            return false
        }
        let (changed, recovered) = state.withLock { state in
            defer {
                state.origins = origins
                state.failing = false
            }
            return (state.origins != origins, state.failing)
        }
        if recovered { logger.info("the allowed origins are readable again") }
        if changed {
            logger.debug("allowed origins read", [("count", String(origins.count))])
            onUpdate(origins)
        }
        return true
    }

    func run() async throws {
        while !latch.isOpen {
            await poll()
            await latch.sleep(for: interval)
        }
    }

    func shutdown() async {
        latch.open()
    }
}
