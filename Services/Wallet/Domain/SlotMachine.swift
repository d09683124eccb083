import RaveMessages

/// A slot machine's betting math: reels as symbol strips, a window of rows, paylines and a paytable.
///
/// A spin picks one stop per reel; the window shows `rows` consecutive symbols of each strip starting at its stop
/// (wrapping around). A payline names one row per reel; it pays for the longest run of one symbol from the left
/// reel that the paytable lists (the entry with the largest count not above the run).
struct SlotMachine: Hashable, Sendable {
    var reels: [[String]]
    var rows: Int
    var paylines: [[Int]]
    /// Every payline's index, in order: what a bet that names no paylines plays (kept, not rebuilt per bet).
    var allLines: [Int]
    /// Per symbol, (count, multiplier) sorted by count, largest first.
    var paytable: [String: [PaytableLine]]

    struct PaytableLine: Hashable, Sendable {
        var count: Int
        var multiplier: Int64
    }

    /// How a payline ended: the paying symbol, its run length and the line's multiplier (0 when it lost).
    struct LineResult: Hashable, Sendable {
        var symbols: [String]
        var symbol: String
        var count: Int
        var multiplier: Int64
    }

    /// Limits that keep a spin cheap and the exact return-to-player enumeration within seconds.
    static let maximumReels = 6
    static let maximumStripLength = 256
    static let maximumCombinations = 20_000_000
    static let maximumPaylines = 100
    static let maximumMultiplier: Int64 = 1_000_000

    init(_ definition: WalletV1.SlotDefinition) throws(WalletError) {
        let reels = definition.reels.map(\.symbols)
        let rows = Int(definition.rows)
        let paylines = definition.paylines.map { $0.rows.map(Int.init) }
        guard (1...Self.maximumReels).contains(reels.count) else {
            throw .invalidArgument("a slot needs 1…\(Self.maximumReels) reels, got \(reels.count)")
        }
        for (index, strip) in reels.enumerated() {
            guard (1...Self.maximumStripLength).contains(strip.count), strip.allSatisfy({ !$0.isEmpty }) else {
                throw .invalidArgument(
                    "reel \(index) needs 1…\(Self.maximumStripLength) non-empty symbols, got \(strip.count)")
            }
        }
        guard rows >= 1, reels.allSatisfy({ rows <= $0.count }) else {
            throw .invalidArgument("rows must be 1…the shortest reel's length, got \(rows)")
        }
        let combinations = reels.reduce(1) { $0 * $1.count }
        guard combinations <= Self.maximumCombinations else {
            throw .invalidArgument(
                "the reels have \(combinations) stop combinations; at most \(Self.maximumCombinations)")
        }
        guard (1...Self.maximumPaylines).contains(paylines.count) else {
            throw .invalidArgument("a slot needs 1…\(Self.maximumPaylines) paylines, got \(paylines.count)")
        }
        for (index, line) in paylines.enumerated() {
            guard line.count == reels.count, line.allSatisfy({ (0..<rows).contains($0) }) else {
                throw .invalidArgument("payline \(index) needs one row in 0..<\(rows) per reel (\(reels.count))")
            }
        }
        var table: [String: [PaytableLine]] = [:]
        for entry in definition.paytable {
            guard (1...reels.count).contains(Int(entry.count)), (1...Self.maximumMultiplier).contains(entry.multiplier)
            else {
                throw .invalidArgument(
                    "paytable entry \(entry.symbol)×\(entry.count) needs count 1…\(reels.count) "
                        + "and multiplier 1…\(Self.maximumMultiplier)")
            }
            guard reels.contains(where: { $0.contains(entry.symbol) }) else {
                throw .invalidArgument("paytable symbol \"\(entry.symbol)\" is on no reel")
            }
            guard !(table[entry.symbol] ?? []).contains(where: { $0.count == Int(entry.count) }) else {
                throw .invalidArgument("paytable lists \(entry.symbol)×\(entry.count) twice")
            }
            table[entry.symbol, default: []].append(PaytableLine(count: Int(entry.count), multiplier: entry.multiplier))
        }
        guard !table.isEmpty else { throw .invalidArgument("the paytable is empty") }
        self.reels = reels
        self.rows = rows
        self.paylines = paylines
        allLines = Array(paylines.indices)
        paytable = table.mapValues { $0.sorted { $0.count > $1.count } }
    }

    /// The visible symbols, `window[row][reel]`, for one stop per reel.
    func window(stops: [Int]) -> [[String]] {
        (0..<rows).map { row in
            reels.indices.map { reel in reels[reel][(stops[reel] + row) % reels[reel].count] }
        }
    }

    /// What payline `line` pays in `window`.
    func evaluate(line: Int, window: [[String]]) -> LineResult {
        let symbols = paylines[line].enumerated().map { reel, row in window[row][reel] }
        let first = symbols[0]
        let run = symbols.prefix { $0 == first }.count
        if let paying = paytable[first]?.first(where: { $0.count <= run }) {
            return LineResult(symbols: symbols, symbol: first, count: paying.count, multiplier: paying.multiplier)
        }
        return LineResult(symbols: symbols, symbol: "", count: 0, multiplier: 0)
    }

    /// Draws the stops from `random` (one uniform draw per reel, in reel order).
    func drawStops(_ random: inout FairRandom) -> [Int] {
        reels.map { random.next(below: $0.count) }
    }

    /// The exact expected multiplier per unit wagered with every payline played (the wager split evenly),
    /// by enumerating every combination of reel stops.
    func returnToPlayer() -> Fraction {
        var total: Int64 = 0
        var stops = [Int](repeating: 0, count: reels.count)
        let combinations = reels.reduce(1) { $0 * $1.count }
        for _ in 0..<combinations {
            let window = window(stops: stops)
            for line in paylines.indices { total += evaluate(line: line, window: window).multiplier }
            // Odometer increment over the reels.
            for reel in stops.indices.reversed() {
                stops[reel] += 1
                if stops[reel] < reels[reel].count { break }
                stops[reel] = 0
            }
        }
        return Fraction(numerator: total, denominator: Int64(combinations) * Int64(paylines.count))
    }
}

/// A non-negative exact ratio, shown as a decimal.
struct Fraction: Hashable, Sendable {
    var numerator: Int64
    var denominator: Int64

    /// Truncated to `places` decimals ("0.957500").
    func decimal(places: Int = 6) -> String {
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let (high, low) = numerator.magnitude.multipliedFullWidth(by: UInt64(scale))
        let scaled = denominator.magnitude.dividingFullWidth((high, low)).quotient
        return MoneyFormat.format(Int64(scaled), decimals: places)
    }

    var doubleValue: Double { Double(numerator) / Double(denominator) }
}
