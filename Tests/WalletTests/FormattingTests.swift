import Testing

@testable import Wallet

/// The wallet's hand-written formatting of hex and amounts.
@Suite struct FormattingTests {
    @Test func hexIsLowercaseTwoDigitsPerByte() {
        #expect(Crypto.hex([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Crypto.hex([]) == "")
    }

    @Test func formatsTheExtremes() {
        #expect(MoneyFormat.format(.min, decimals: 2) == "-92233720368547758.08")
        #expect(MoneyFormat.format(.max, decimals: 0) == "9223372036854775807")
        #expect(MoneyFormat.format(7, decimals: 8) == "0.00000007")
    }
}
