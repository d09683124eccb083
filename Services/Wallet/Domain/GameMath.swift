import RaveMessages

/// A game's betting math, validated from its definition; computes outcomes and the exact return to player.
enum GameMath: Hashable, Sendable {
    case slot(SlotMachine)
    case odds(OddsGame)

    /// The result of one play: the outcome the client sees (without formatted amounts) and the payout.
    struct Play: Hashable, Sendable {
        var stops: [Int] = []
        var window: [[String]] = []
        var lines: [(line: Int, result: SlotMachine.LineResult, payout: Int64)] = []
        var number = 0
        var payout: Int64 = 0

        static func == (lhs: Play, rhs: Play) -> Bool {
            lhs.stops == rhs.stops && lhs.number == rhs.number && lhs.payout == rhs.payout
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(stops)
            hasher.combine(number)
            hasher.combine(payout)
        }
    }

    init(_ game: WalletV1.Game) throws(WalletError) {
        switch game.math {
        case .slot(let definition): self = .slot(try SlotMachine(definition))
        case .odds(let definition): self = .odds(try OddsGame(definition))
        case nil: throw .invalidArgument("game \"\(game.gameId)\" needs a slot or odds definition")
        }
    }

    var kind: String {
        switch self {
        case .slot: "slot"
        case .odds: "odds"
        }
    }

    func returnToPlayer() -> Fraction {
        switch self {
        case .slot(let machine): machine.returnToPlayer()
        case .odds(let game): game.returnToPlayer()
        }
    }

    /// The paylines a bet plays: all when `requested` is empty, else the listed ones (each once, in range).
    func lines(_ requested: [Int32]) throws(WalletError) -> [Int] {
        guard case .slot(let machine) = self else {
            guard requested.isEmpty else { throw .invalidArgument("paylines apply to slot games only") }
            return []
        }
        if requested.isEmpty { return machine.allLines }
        let lines = requested.map(Int.init)
        guard lines.allSatisfy({ machine.paylines.indices.contains($0) }), Set(lines).count == lines.count else {
            throw .invalidArgument("paylines must be distinct indexes in 0..<\(machine.paylines.count)")
        }
        return lines
    }

    /// Plays one bet of `wager` minor units on `lines`, drawing from `random`.
    ///
    /// A slot splits the wager evenly over the lines played: a line paying m pays wager × m / lines, and the
    /// total is wager × Σm / lines, rounded down to the minor unit (the house keeps the sub-unit remainder).
    func play(wager: Int64, lines: [Int], random: inout FairRandom) throws(WalletError) -> Play {
        var play = Play()
        switch self {
        case .slot(let machine):
            play.stops = machine.drawStops(&random)
            play.window = machine.window(stops: play.stops)
            var sum: Int64 = 0
            play.lines.reserveCapacity(lines.count)
            for line in lines {
                let result = machine.evaluate(line: line, window: play.window)
                sum += result.multiplier
                let linePayout = try Self.scale(wager, by: result.multiplier, over: Int64(lines.count))
                play.lines.append((line, result, linePayout))
            }
            play.payout = try Self.scale(wager, by: sum, over: Int64(lines.count))
        case .odds(let game):
            play.number = random.next(below: game.sides) + 1
            if play.number <= game.winningNumbers {
                play.payout = try Self.scale(wager, by: game.multiplierNumerator, over: game.multiplierDenominator)
            }
        }
        return play
    }

    /// wager × multiplier / divisor, rounded down, without intermediate overflow.
    static func scale(_ wager: Int64, by multiplier: Int64, over divisor: Int64) throws(WalletError) -> Int64 {
        let (high, low) = wager.magnitude.multipliedFullWidth(by: multiplier.magnitude)
        guard high < divisor.magnitude else { throw .invalidArgument("the payout of this wager is too large") }
        let quotient = divisor.magnitude.dividingFullWidth((high, low)).quotient
        guard quotient <= UInt64(MoneyFormat.maximumPayout) else {
            throw .invalidArgument("the payout of this wager is too large")
        }
        return Int64(quotient)
    }

    /// The wire outcome of `play`, amounts formatted in `currency`.
    static func outcome(_ play: Play, currency: Currency) -> WalletV1.Outcome {
        var outcome = WalletV1.Outcome()
        outcome.stops = play.stops.map { Int32($0) }
        outcome.window = play.window.map { WalletV1.WindowRow(symbols: $0) }
        outcome.paylines = play.lines.map { line in
            WalletV1.PaylineOutcome(
                payline: Int32(line.line), symbols: line.result.symbols, symbol: line.result.symbol,
                count: Int32(line.result.count), payout: MoneyFormat.format(line.payout, currency: currency))
        }
        outcome.number = Int32(play.number)
        outcome.payout = MoneyFormat.format(play.payout, currency: currency)
        return outcome
    }
}
