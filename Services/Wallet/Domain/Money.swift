/// A currency as the ledger knows it: amounts are integers in units of 10^-decimals.
struct Currency: Hashable, Sendable {
    var code: String
    /// Digits after the decimal point (USD 2, BTC 8, a game's coins 0).
    var decimals: Int

    /// The largest number of decimals a currency may have; keeps 10^decimals and amounts well inside Int64.
    static let maximumDecimals = 8

    /// Whether `code` is 2…12 upper-case letters or digits.
    static func isValidCode(_ code: String) -> Bool {
        (2...12).contains(code.utf8.count)
            && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || isDigit($0) }
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

/// Exact conversion between the API's decimal strings and integer minor units.
///
/// No floating point anywhere.
enum MoneyFormat {
    /// The largest amount accepted, in minor units: leaves room for payouts (amount × multiplier) in Int64.
    static let maximumMinorUnits: Int64 = 1_000_000_000_000_000
    /// The largest payout one bet may produce, so balances stay far from Int64 overflow.
    static let maximumPayout: Int64 = 1_000_000_000_000_000_000

    /// Parses "12", "12.5" or "0.05" into minor units of `currency`.
    ///
    /// Rejects signs, exponents, spaces, empty parts ("1.", ".5"), more decimals than the currency has and
    /// amounts above `maximumMinorUnits`. `allowNegative` admits a leading "-" (adjustments).
    static func parse(_ text: String, currency: Currency, allowNegative: Bool = false) throws(WalletError) -> Int64 {
        // Read in place from the string's bytes: every bet parses its wager, so copies and splits showed in profiles.
        var number = text.utf8[...]
        let negative = allowNegative && number.first == UInt8(ascii: "-")
        if negative { number = number.dropFirst() }
        let point = number.firstIndex(of: UInt8(ascii: "."))
        let whole = number[..<(point ?? number.endIndex)]
        let fraction = number[(point.map { number.index(after: $0) } ?? number.endIndex)...]
        guard !whole.isEmpty, whole.allSatisfy(Currency.isDigit), fraction.allSatisfy(Currency.isDigit),
            point == nil || !fraction.isEmpty
        else {
            throw .invalidArgument("amount \"\(text)\" is not a decimal number like \"12.50\"")
        }
        let fractionDigits = fraction.count
        guard fractionDigits <= currency.decimals else {
            throw .invalidArgument(
                "amount \"\(text)\" has \(fractionDigits) decimals; \(currency.code) allows at most \(currency.decimals)"
            )
        }
        var value: Int64 = 0
        func append(_ digit: UInt8) throws(WalletError) {
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let next = shifted &+ Int64(digit - UInt8(ascii: "0"))
            guard !overflow, next <= maximumMinorUnits else {
                throw .invalidArgument("amount \"\(text)\" is too large")
            }
            value = next
        }
        for digit in whole { try append(digit) }
        for digit in fraction { try append(digit) }
        for _ in fractionDigits..<currency.decimals { try append(UInt8(ascii: "0")) }
        return negative ? -value : value
    }

    /// Parses a wager or transfer amount that must be positive.
    static func parsePositive(_ text: String, currency: Currency, field: String) throws(WalletError) -> Int64 {
        let value = try parse(text, currency: currency)
        guard value > 0 else { throw .invalidArgument("\(field) must be greater than 0, got \"\(text)\"") }
        return value
    }

    /// Formats minor units with exactly the currency's decimals: 5 cents of USD is "0.05".
    static func format(_ minorUnits: Int64, currency: Currency) -> String {
        format(minorUnits, decimals: currency.decimals)
    }

    static func format(_ minorUnits: Int64, decimals: Int) -> String {
        // Written right to left into a stack buffer: every bet result formats several amounts, so this is hot.
        let places = max(decimals, 0)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 22 + places) { buffer in
            var magnitude = minorUnits.magnitude
            var position = buffer.count
            var written = 0
            repeat {
                if places > 0 && written == places {
                    position -= 1
                    buffer[position] = UInt8(ascii: ".")
                }
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                written += 1
            } while magnitude > 0 || written <= places
            if minorUnits < 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "-")
            }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[position...]), as: UTF8.self)
        }
    }
}
