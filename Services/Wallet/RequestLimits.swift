import RaveRuntime

/// The ranges of the wallet's numeric request fields, as the proto comments state them; the tests compare the two.
enum RequestLimits {
    static let transactionPageSizes = RequestRange("page_size", 1...100, zeroMeans: 20)
    static let currencyDecimals = RequestRange("decimals", 0...Int64(Currency.maximumDecimals))

    /// Every range above with the message whose field it checks.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.wallet.v1.ListTransactionsRequest", transactionPageSizes),
        ("rave.wallet.v1.CreateCurrencyRequest", currencyDecimals),
    ]
}
