import Testing

@testable import Wallet

/// The wallet's hand-written formatting of amounts and request hashes (hex is RaveCrypto's, tested there).
@Suite struct FormattingTests {
    @Test func formatsTheExtremes() {
        #expect(MoneyFormat.format(.min, decimals: 2) == "-92233720368547758.08")
        #expect(MoneyFormat.format(.max, decimals: 0) == "9223372036854775807")
        #expect(MoneyFormat.format(7, decimals: 8) == "0.00000007")
    }

    /// Stored bets keep the hash of their request: the bytes written in place are the fields joined as strings,
    /// as they were before.
    @Test(arguments: [
        ("dice", Int64(50), "USD", Int32(1), [Int](), "", PreparedBet.Kind.backed, ""),
        ("slot", 123_456_789, "EUR", 2, [1, 5, 20], "seed with ünïcode \u{1F}", .credit, "dice"),
        ("", 1, "", 0, [0], "s", .unbackedCredit, "x"),
    ])
    func canonicalRequestIsTheJoinedFields(
        game: String, wager: Int64, currency: String, economy: Int32, lines: [Int], clientSeed: String,
        kind: PreparedBet.Kind, creditGame: String
    ) {
        let joined = [
            game, String(wager), currency, String(economy), lines.map(String.init).joined(separator: ","), clientSeed,
            kind.rawValue, creditGame,
        ].joined(separator: "\u{1F}")
        let written = PreparedBet.canonicalRequest(
            gameID: game, wager: wager, currency: currency, economy: economy, lines: lines, clientSeed: clientSeed,
            kind: kind, creditGameID: creditGame)
        #expect(written == Array(joined.utf8))
    }
}
