import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres

/// One kind of call in the load test's mix.
enum LoadtestOperation: String, CaseIterable, Sendable, Codable {
    case submit
    case position
    case top
    case around
    case friends
    /// A batch of bets through the gateway (`ravectl loadtest bets`).
    case bets

    /// The operations of `ravectl loadtest leaderboards`, the names its `--mix` takes.
    static let leaderboards: [LoadtestOperation] = [.submit, .position, .top, .around, .friends]

    /// The method each operation calls.
    var method: String {
        switch self {
        case .submit: "rave.leaderboards.v1.Leaderboards/SubmitScore"
        case .position: "rave.leaderboards.v1.Leaderboards/GetLeaderboard"
        case .top: "rave.leaderboards.v1.Leaderboards/GetGlobalScores"
        case .around: "rave.leaderboards.v1.Leaderboards/GetGlobalScoresAdjacent"
        case .friends: "rave.leaderboards.v1.Leaderboards/GetFriendsScores"
        case .bets: "rave.gateway.v1.Gateway/Batch"
        }
    }
}

/// How players or boards are picked for each call.
enum LoadtestChoice: Sendable, CustomStringConvertible {
    case uniform
    /// Zipf with this exponent: the k-th most popular item is picked in proportion to 1/k^exponent.
    case zipf(Double)

    init(_ text: String) throws(UsageError) {
        if text == "uniform" {
            self = .uniform
        } else if text == "zipf" {
            self = .zipf(1.0)
        } else if text.hasPrefix("zipf:"), let exponent = Double(text.dropFirst(5)), exponent > 0 {
            self = .zipf(exponent)
        } else {
            throw UsageError("a choice must be uniform, zipf or zipf:EXPONENT (> 0), got \(text)")
        }
    }

    var description: String {
        switch self {
        case .uniform: "uniform"
        case .zipf(let exponent): "zipf:\(exponent)"
        }
    }
}

/// Everything a connection needs to generate load; immutable, shared by all connections.
struct LoadtestPlan: Sendable {
    var app: String
    var boardKeys: [String]
    var users: Int
    /// Operations with cumulative weights, for picking one with a single random number.
    var cumulativeWeights: [(operation: LoadtestOperation, upTo: Int)]
    var userSampler: IndexSampler
    var boardSampler: IndexSampler
    /// Calls per second per connection in an open loop; nil for a closed loop.
    var ratePerConnection: Double?
    var inFlight: Int
    var pageSize: Int
    var adjacent: Int
    /// What each `.bets` call sends; nil when the mix has none.
    var bets: LoadtestBetBatch?
    var start: UInt64
    var measureFrom: UInt64
    var end: UInt64
    /// Unix microseconds at `start`: submitted scores count wall-clock microseconds, so they rise across runs too.
    var wallClockAtStart: Int64

    /// The score a submit intended at `intended` sends: the wall clock in microseconds, above every seeded score
    /// and above every earlier submit of any run, so each submit is a player's new best (a durable write).
    func improvingScore(intendedAt intended: UInt64) -> Int64 {
        wallClockAtStart + Int64(intended / 1000) - Int64(start / 1000)
    }

    /// The Rave ID of seeded player `index`: a fixed prefix, so a later run finds the players an earlier one seeded.
    static func userID(_ index: Int) -> RaveID {
        RaveID(high: 0x6c6f_6164_7465_7374, low: UInt64(index))
    }

    /// The score seeded for player `index` on board `board`: scattered, below anything a load-test submit sends.
    static func seededScore(user index: Int, board: Int) -> Int64 {
        let seed = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(board) &* 0xBF58_476D_1CE4_E5B9
        var generator = SplitMix64(seed: seed)
        return Int64(generator.next() % 1_000_000_000)
    }

    /// Parses "submit=1,position=4,…"; operations left out get weight 0.
    static func weights(_ text: String) throws(UsageError) -> [(operation: LoadtestOperation, upTo: Int)] {
        var total = 0
        var result: [(operation: LoadtestOperation, upTo: Int)] = []
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=")
            guard pair.count == 2, let operation = LoadtestOperation(rawValue: String(pair[0])),
                LoadtestOperation.leaderboards.contains(operation), let weight = Int(pair[1]),
                (0...1_000_000).contains(weight)
            else {
                let names = LoadtestOperation.leaderboards.map(\.rawValue).joined(separator: ", ")
                throw UsageError("--mix takes NAME=WEIGHT pairs with names from \(names), got \(part)")
            }
            total += weight
            if weight > 0 { result.append((operation, total)) }
        }
        guard total > 0 else { throw UsageError("--mix needs at least one positive weight") }
        return result
    }
}

/// Picks an index in 0..<count, uniformly or Zipf-distributed, without tables (so 10 million players cost
/// nothing): rejection-inversion sampling (Hörmann and Derflinger, 1996), as Apache Commons RNG does it.
///
/// Popular ranks are scattered over the index range by a multiplicative permutation, so the hot players are not
/// simply the first ones seeded.
struct IndexSampler: Sendable {
    let count: Int
    let exponent: Double?
    private let integralOfFirst: Double
    private let integralOfLast: Double
    private let squeeze: Double
    private let stride: Int

    init(count: Int, choice: LoadtestChoice) {
        self.count = max(1, count)
        switch choice {
        case .uniform: exponent = nil
        case .zipf(let value): exponent = value
        }
        let s = exponent ?? 1
        integralOfFirst = Self.integral(1.5, s) - 1
        integralOfLast = Self.integral(Double(self.count) + 0.5, s)
        squeeze = 2 - Self.inverseIntegral(Self.integral(2.5, s) - Self.h(2, s), s)
        stride = Self.coprimeStride(for: self.count)
    }

    func next(_ random: inout SplitMix64) -> Int {
        guard let s = exponent else { return Int(random.next() % UInt64(count)) }
        while true {
            let u = integralOfLast + random.unit() * (integralOfFirst - integralOfLast)
            let x = Self.inverseIntegral(u, s)
            let k = min(max(Int(x + 0.5), 1), count)
            if Double(k) - x <= squeeze || u >= Self.integral(Double(k) + 0.5, s) - Self.h(Double(k), s) {
                return (k - 1) * stride % count
            }
        }
    }

    private static func h(_ x: Double, _ s: Double) -> Double { exp(-s * log(x)) }

    private static func integral(_ x: Double, _ s: Double) -> Double {
        let logX = log(x)
        return helper2((1 - s) * logX) * logX
    }

    private static func inverseIntegral(_ x: Double, _ s: Double) -> Double {
        var t = x * (1 - s)
        if t < -1 { t = -1 }
        return exp(helper1(t) * x)
    }

    /// log1p(x) / x, stable near 0.
    private static func helper1(_ x: Double) -> Double {
        abs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x))
    }

    /// expm1(x) / x, stable near 0.
    private static func helper2(_ x: Double) -> Double {
        abs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x))
    }

    /// A stride near count × golden ratio that shares no factor with count, so k ↦ k × stride mod count permutes.
    private static func coprimeStride(for count: Int) -> Int {
        guard count > 2 else { return 1 }
        var candidate = Int(Double(count) * 0.618_033_988_75) | 1
        while gcd(candidate, count) != 1 { candidate += 2 }
        return candidate % count == 0 ? 1 : candidate
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
}
