import RaveMessages

/// The simple odds game: a number is drawn uniformly from 1…sides and the bet wins
/// `multiplierNumerator / multiplierDenominator` × wager when the number is at most `winningNumbers`.
struct OddsGame: Hashable, Sendable {
    var sides: Int
    var winningNumbers: Int
    var multiplierNumerator: Int64
    var multiplierDenominator: Int64

    static let maximumSides = 1_000_000

    init(_ definition: WalletV1.OddsDefinition) throws(WalletError) {
        sides = Int(definition.sides)
        winningNumbers = Int(definition.winningNumbers)
        multiplierNumerator = definition.multiplierNumerator
        multiplierDenominator = definition.multiplierDenominator
        guard (2...Self.maximumSides).contains(sides) else {
            throw .invalidArgument("sides must be 2…\(Self.maximumSides), got \(sides)")
        }
        guard (1..<sides).contains(winningNumbers) else {
            throw .invalidArgument("winning_numbers must be 1…\(sides - 1), got \(winningNumbers)")
        }
        guard (1...1_000_000).contains(multiplierNumerator), (1...1_000_000).contains(multiplierDenominator) else {
            throw .invalidArgument("the multiplier's numerator and denominator must be 1…1000000")
        }
    }

    /// The exact expected payout per unit wagered.
    func returnToPlayer() -> Fraction {
        Fraction(
            numerator: Int64(winningNumbers) * multiplierNumerator, denominator: Int64(sides) * multiplierDenominator)
    }
}
