import Testing

@testable import Wallet

@Suite struct MoneyFormatTests {
    let usd = Currency(code: "USD", decimals: 2)
    let coins = Currency(code: "COIN", decimals: 0)

    @Test(arguments: [("0.05", Int64(5)), ("12", 1200), ("12.5", 1250), ("12.50", 1250), ("0", 0), ("007.10", 710)])
    func parsesDecimalStringsExactly(text: String, minorUnits: Int64) throws {
        #expect(try MoneyFormat.parse(text, currency: usd) == minorUnits)
    }

    @Test(arguments: ["0.001", "1.234", "", ".5", "1.", "-1", "+1", "1e3", " 1", "1,5", "abc", "1.2.3"])
    func rejectsMalformedAmountsAndTooManyDecimals(text: String) {
        #expect(throws: WalletError.self) { try MoneyFormat.parse(text, currency: usd) }
    }

    @Test func rejectsDecimalsForAWholeUnitCurrency() {
        #expect(throws: WalletError.invalidArgument("amount \"1.0\" has 1 decimals; COIN allows at most 0")) {
            try MoneyFormat.parse("1.0", currency: coins)
        }
        #expect((try? MoneyFormat.parse("15", currency: coins)) == 15)
    }

    @Test func rejectsAmountsBeyondTheLimit() {
        #expect(throws: WalletError.self) { try MoneyFormat.parse("99999999999999999999", currency: usd) }
    }

    @Test func negativeAmountsOnlyWhenAllowed() throws {
        #expect(try MoneyFormat.parse("-2.50", currency: usd, allowNegative: true) == -250)
        #expect(throws: WalletError.self) { try MoneyFormat.parsePositive("0.00", currency: usd, field: "wager") }
    }

    @Test(arguments: [(Int64(5), "0.05"), (1200, "12.00"), (0, "0.00"), (-250, "-2.50"), (123_456, "1234.56")])
    func formatsWithTheCurrencysDecimals(minorUnits: Int64, text: String) {
        #expect(MoneyFormat.format(minorUnits, currency: usd) == text)
    }

    @Test func formatAndParseRoundTrip() throws {
        let btc = Currency(code: "BTC", decimals: 8)
        for value in [Int64(1), 99, 100_000_000, 123_456_789_012] {
            #expect(try MoneyFormat.parse(MoneyFormat.format(value, currency: btc), currency: btc) == value)
        }
        #expect(MoneyFormat.format(42, currency: coins) == "42")
    }
}
