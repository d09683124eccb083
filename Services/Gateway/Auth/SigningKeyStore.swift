import RaveAuth
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

/// Identity's token-signing public keys, fetched with `IdentityInternal/SigningKeys` and kept current.
///
/// Refreshed every `interval` by `run()` (a background service), and on demand when a token names a key id
/// the store has not seen (identity rotated its key); on-demand fetches are at most one per `minimumGap`, and
/// concurrent askers share one fetch, so a flood of forged key ids cannot hammer identity.
final class SigningKeyStore: Service {
    let name = "signing-keys"
    private let identity: IdentityV1.IdentityInternalClient
    private let interval: Duration
    private let minimumGap: UInt64
    private let logger: Logger
    private let latch = ShutdownLatch()
    /// The clock skew of every verifier this store makes, which caches of verified claims must use too.
    let clockSkew = AccessTokenVerifier.defaultClockSkew

    private struct State {
        var verifier: AccessTokenVerifier?
        var lastFetch: UInt64 = 0
        var fetch: Task<Void, Never>?
    }

    private let state = Mutex(State())

    init(identity: any RPCCaller, interval: Duration, minimumGap: Duration, logger: Logger) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.interval = interval
        self.minimumGap = minimumGap.wholeNanoseconds
        self.logger = logger
    }

    /// The verifier for the keys fetched last; nil until the first fetch succeeded.
    var verifier: AccessTokenVerifier? { state.withLock { $0.verifier } }

    /// Fetches the keys unless a fetch ran less than `minimumGap` ago; waits for a fetch already running.
    func refreshIfAllowed() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            if let running = state.fetch { return running }
            let now = monotonicNanoseconds()
            guard state.lastFetch == 0 || now &- state.lastFetch >= minimumGap else { return nil }
            state.lastFetch = now
            let task = Task { await self.fetch() }
            state.fetch = task
            return task
        }
        await task?.value
    }

    /// Fetches the keys now (start-up and the periodic refresh).
    func refresh() async {
        let task = state.withLock { state -> Task<Void, Never> in
            if let running = state.fetch { return running }
            state.lastFetch = monotonicNanoseconds()
            let task = Task { await self.fetch() }
            state.fetch = task
            return task
        }
        await task.value
    }

    private func fetch() async {
        defer { state.withLock { $0.fetch = nil } }
        do {
            let response = try await identity.signingKeys(
                IdentityV1.SigningKeysRequest(), options: CallOptions(timeout: .seconds(5)))
            var keys: [SigningKeySet.Key] = []
            for key in response.keys where key.algorithm == "EdDSA" || key.algorithm.isEmpty {
                do {
                    keys.append(
                        .init(keyID: key.kid, publicKey: try Ed25519PublicKey(rawRepresentation: key.publicKey)))
                } catch {
                    logger.warning("ignoring an unusable signing key", [("kid", key.kid), ("error", error.message)])
                }
            }
            let verifier = AccessTokenVerifier(keys: SigningKeySet(keys: keys), clockSkew: clockSkew)
            state.withLock { $0.verifier = verifier }
            logger.debug("signing keys fetched", [("count", String(keys.count))])
        } catch {
            logger.warning("fetching signing keys failed", [("error", error.message)])
        }
    }

    func run() async throws {
        while !latch.isOpen {
            await refresh()
            await latch.sleep(for: verifier == nil ? min(interval, .seconds(1)) : interval)
        }
    }

    func shutdown() async {
        latch.open()
    }
}
