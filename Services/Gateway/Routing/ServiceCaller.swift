import RaveRPC
import RaveTransport

/// Calls one service through its pool: round robin over healthy backends, and a failure marked not processed
/// (the backend never started the call) is retried on another healthy backend, at most `maxAttempts` in all.
///
/// Nothing else is retried: a call a backend may have started could have taken effect.
struct ServiceCaller: RPCCaller {
    let pool: BackendPool
    var maxAttempts = 3
    /// A leaderboards call's board: the owner goes first, and a `NotBoardOwner` refusal sends the call to the
    /// owner it names (the refusing backend is not marked unhealthy).
    var board: BoardRouting?

    func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        try await call(method: method, request: request, options: options, after: nil)
    }

    /// Like `call`, continuing after a first attempt made elsewhere (the loop proxy's) failed not processed.
    func call(
        method: String, request: [UInt8], options: CallOptions, after failed: (index: Int, error: RPCError)?
    ) async throws(RPCError) -> [UInt8] {
        let deadline = monotonicNanoseconds() &+ options.timeout.wholeNanoseconds
        var tried: Set<Int> = failed.map { [$0.index] } ?? []
        var lastError =
            failed?.error ?? RPCError.unavailable("no backend of \(pool.service) is healthy", notProcessed: true)
        var preferred = board?.owner
        if let failed, let named = board?.owners.ownerNamed(by: failed.error) { preferred = named }
        for _ in 0..<(maxAttempts - tried.count) {
            if tried.count == pool.backends.count { tried.removeAll() }
            guard let (index, backend) = pool.choose(preferring: preferred, excluding: tried) else { break }
            tried.insert(index)
            let now = monotonicNanoseconds()
            guard deadline > now else { break }
            var attemptOptions = options
            attemptOptions.timeout = .nanoseconds(Int64(deadline - now))
            attemptOptions.maxRetries = 0
            do {
                return try await backend.client.call(method: method, request: request, options: attemptOptions)
            } catch  where error.notProcessed && !Task.isCancelled {
                lastError = error
                if let named = board?.owners.ownerNamed(by: error) {
                    preferred = named
                    continue
                }
                if error.code == .unavailable { backend.markHealthy(false) }
            }
        }
        if lastError.code == .unavailable {
            lastError.message = "\(pool.service) is unavailable: \(lastError.message)"
        }
        throw lastError
    }
}
