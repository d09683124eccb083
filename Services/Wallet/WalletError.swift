import RaveRPC
import RaveRuntime

/// Every failure the wallet reports on purpose; its kind decides the status (`StatusError.rpcError`).
struct WalletError: StatusError {
    /// What went wrong, which decides the status code.
    enum Kind: Hashable, Sendable {
        case invalidArgument
        case notFound
        case permissionDenied
        /// Not enough money or credits: the bet is remembered as failed.
        case insufficientFunds
        /// The id was used before for a different request.
        case conflictingReplay
        case failedPrecondition
        /// A peer the wallet needs (identity) could not answer; nothing was done.
        case unavailable
        /// The call carries no user where it needs one.
        case unauthenticated
        /// A broken promise of the wallet's own code.
        case internalError
    }

    var kind: Kind
    var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func invalidArgument(_ message: String) -> WalletError { WalletError(.invalidArgument, message) }
    static func notFound(_ message: String) -> WalletError { WalletError(.notFound, message) }

    var description: String { "\(kind): \(message)" }

    var code: StatusCode {
        switch kind {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .permissionDenied: .permissionDenied
        case .insufficientFunds, .failedPrecondition: .failedPrecondition
        case .conflictingReplay: .alreadyExists
        case .unavailable: .unavailable
        case .unauthenticated: .unauthenticated
        case .internalError: .internal
        }
    }

    /// Identity could not answer, so nothing was done.
    var notProcessed: Bool { kind == .unavailable }
}

/// The ranges of the wallet's numeric request fields, as the proto comments state them; the tests compare the two.
enum RequestLimits {
    static let transactionPageSizes = RequestRange("page_size", 1...100, zeroMeans: 20)
    static let currencyDecimals = RequestRange("decimals", 0...Int64(Currency.maximumDecimals))

    /// Every range above with the message whose field it checks.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.wallet.v1.ListTransactionsRequest", transactionPageSizes),
        ("rave.wallet.v1.ListUserTransactionsRequest", transactionPageSizes),
        ("rave.wallet.v1.CreateCurrencyRequest", currencyDecimals),
    ]
}
