/// How fast a client may call: a steady rate and the burst it may spend at once.
struct RateLimit: Sendable, Hashable {
    /// Tokens added per second.
    var perSecond: Double
    /// The bucket's size: the most calls allowed back to back.
    var burst: Double
}

/// A token bucket: `take` spends tokens that refill at `limit.perSecond`, up to `limit.burst`.
///
/// A plain value with the clock passed in, so its arithmetic is tested without sleeping.
struct TokenBucket: Sendable {
    let limit: RateLimit
    private(set) var tokens: Double
    private var updatedAt: UInt64

    /// A full bucket at time `now` (monotonic nanoseconds).
    init(limit: RateLimit, now: UInt64) {
        self.limit = limit
        self.tokens = limit.burst
        self.updatedAt = now
    }

    /// Spends `cost` tokens and returns nil, or spends nothing and returns the nanoseconds to wait.
    ///
    /// A cost above the burst is charged as the whole burst, so a large batch can still run.
    mutating func take(_ cost: Double, now: UInt64) -> UInt64? {
        refill(now: now)
        let charged = min(cost, limit.burst)
        if tokens >= charged {
            tokens -= charged
            return nil
        }
        return UInt64(((charged - tokens) / limit.perSecond * 1e9).rounded(.up))
    }

    /// True when the bucket has refilled completely: forgetting it changes nothing.
    func isFull(now: UInt64) -> Bool {
        let elapsed = now > updatedAt ? Double(now - updatedAt) / 1e9 : 0
        return tokens + elapsed * limit.perSecond >= limit.burst
    }

    private mutating func refill(now: UInt64) {
        guard now > updatedAt else { return }
        tokens = min(limit.burst, tokens + Double(now - updatedAt) / 1e9 * limit.perSecond)
        updatedAt = now
    }
}
