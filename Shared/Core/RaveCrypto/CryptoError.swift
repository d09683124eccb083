/// Why a cryptographic operation or a credential check failed.
///
/// An open struct rather than an enum so new reasons don't break callers. Handlers map it to an RPC status:
/// `invalidToken` and `expiredToken` are UNAUTHENTICATED, `invalidArgument` is INVALID_ARGUMENT,
/// `configuration`, `sealedDataRejected` and `internalFailure` are INTERNAL (or a start-up failure).
/// The error type of RaveCrypto and of the token code built on it (RaveAuth); the identity service uses it for its
/// other credential checks too.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The category of failure, for mapping to a status code.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The reason's stable name, as logged.
        public let name: String

        /// A token or signature is malformed, forged, for another audience or issuer, or uses a rejected algorithm.
        public static let invalidToken = Reason(name: "invalid_token")
        /// A well-formed token whose lifetime has ended (or not yet begun).
        public static let expiredToken = Reason(name: "expired_token")
        /// Caller-supplied input is malformed (a stored hash, a key, a code format).
        public static let invalidArgument = Reason(name: "invalid_argument")
        /// Configuration (environment variables, key files) is missing or malformed.
        public static let configuration = Reason(name: "configuration")
        /// Sealed data (AES-256-GCM) did not authenticate: a wrong key, other associated data, or altered bytes.
        public static let sealedDataRejected = Reason(name: "sealed_data_rejected")
        /// OpenSSL failed where it should not; the message carries its error queue.
        public static let internalFailure = Reason(name: "internal_failure")

        public var description: String { name }
    }

    /// The category of failure.
    public var reason: Reason
    /// What was wrong, phrased for logs and, for invalid input, for the caller.
    public var message: String

    /// Creates an error with a reason and a message.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }

    /// An `invalidToken` error with `message`.
    public static func invalidToken(_ message: String) -> CryptoError { CryptoError(.invalidToken, message) }
    /// An `expiredToken` error with `message`.
    public static func expiredToken(_ message: String) -> CryptoError { CryptoError(.expiredToken, message) }
    /// An `invalidArgument` error with `message`.
    public static func invalidArgument(_ message: String) -> CryptoError { CryptoError(.invalidArgument, message) }
    /// A `configuration` error with `message`.
    public static func configuration(_ message: String) -> CryptoError { CryptoError(.configuration, message) }
    /// A `sealedDataRejected` error with `message`.
    public static func sealedDataRejected(_ message: String) -> CryptoError {
        CryptoError(.sealedDataRejected, message)
    }
    /// An `internalFailure` error with `message`.
    public static func internalFailure(_ message: String) -> CryptoError { CryptoError(.internalFailure, message) }
}
