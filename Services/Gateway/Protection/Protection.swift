import RaveRPC

/// The gateway's limits on what one client can make it do: requests in flight, calls per address and per
/// user, and request size.
final class Protection: Sendable {
    let inFlight: InFlightLimiter
    let addresses: RateLimiter
    let users: RateLimiter
    let maxRequestBytes: Int

    init(maxInFlight: Int, addressRate: RateLimit, userRate: RateLimit, maxRequestBytes: Int) {
        self.inFlight = InFlightLimiter(maximum: maxInFlight)
        self.addresses = RateLimiter(subject: "client address", limit: addressRate)
        self.users = RateLimiter(subject: "user", limit: userRate)
        self.maxRequestBytes = maxRequestBytes
    }

    /// Admits a request whose calls have the given methods and request sizes (a batch lists each call),
    /// charging the client's address one unit per call.
    ///
    /// Pair it with `release()`. Runs before authentication, so a flood of bad tokens is throttled too.
    func admit<Calls: Collection<(method: String, bytes: Int)>>(
        context: RequestContext, requestSizes calls: Calls
    ) throws(RPCError) {
        try admit(host: CallPipeline.host(of: context.peer.address), requestSizes: calls)
    }

    /// `admit(context:requestSizes:)` for a client at `host` (`CallPipeline.host(of:)` of its address), for a path
    /// that needs the host again.
    func admit<Calls: Collection<(method: String, bytes: Int)>>(
        host: String, requestSizes calls: Calls
    ) throws(RPCError) {
        try inFlight.enter()
        do throws(RPCError) {
            try addresses.charge(host, cost: calls.count)
            for call in calls where call.bytes > maxRequestBytes {
                throw .invalidArgument(
                    "the request of \(call.method) is \(call.bytes) bytes; the gateway accepts at most \(maxRequestBytes)"
                )
            }
        } catch {
            inFlight.leave()
            throw error
        }
    }

    /// Ends a request admitted by `admit`.
    func release() {
        inFlight.leave()
    }
}
