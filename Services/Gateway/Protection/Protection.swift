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

    /// Admits a request carrying `calls` calls (a batch counts each), charging the client's address.
    ///
    /// Pair it with `release()`. Runs before authentication, so a flood of bad tokens is throttled too.
    func admit(context: RequestContext, calls: Int) throws(RPCError) {
        try inFlight.enter()
        do {
            try addresses.charge(CallPipeline.host(of: context.peer.address), cost: calls)
        } catch {
            inFlight.leave()
            throw error
        }
    }

    /// Ends a request admitted by `admit`.
    func release() {
        inFlight.leave()
    }

    /// INVALID_ARGUMENT for a request message above the limit.
    func checkSize(_ count: Int, method: String) throws(RPCError) {
        guard count <= maxRequestBytes else {
            throw .invalidArgument(
                "the request of \(method) is \(count) bytes; the gateway accepts at most \(maxRequestBytes)")
        }
    }
}
