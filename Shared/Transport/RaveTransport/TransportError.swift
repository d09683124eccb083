import Glibc

/// A transport failure: what went wrong (`code`) and the detail to act on (`message`).
///
/// An open struct rather than an enum so new codes don't break callers. Two errors are equal when their codes
/// are; the message is detail, so `error == .timeout` matches every timeout.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The peer refused the connection (nothing listens on the port).
        public static let connectionRefused = Code("connection refused")
        /// The peer reset or dropped the connection without a clean close.
        public static let connectionReset = Code("connection reset")
        /// The operation did not finish in time (connect, TLS handshake, graceful close).
        public static let timeout = Code("timeout")
        /// The channel or listener was closed locally before the operation could finish.
        public static let closed = Code("closed")
        /// The TLS handshake failed: protocol version, certificate verification, a non-TLS peer.
        public static let tlsHandshakeFailed = Code("tls handshake failed")
        /// A TLS error after the handshake.
        public static let tlsFailure = Code("tls failure")
        /// Certificates, keys or CA files could not be loaded, or a TLS context could not be built.
        public static let tlsConfiguration = Code("tls configuration")
        /// The host is not an address we can use: not numeric, and the name does not resolve.
        public static let invalidAddress = Code("invalid address")
        /// Another operating-system call failed.
        public static let systemCall = Code("system call failed")
        /// Development certificates could not be generated or written.
        public static let certificateGeneration = Code("certificate generation failed")

        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The peer refused the connection.
    public static let connectionRefused = Self(.connectionRefused, "connection refused")
    /// The peer reset or dropped the connection.
    public static let connectionReset = Self(.connectionReset, "connection reset by peer")
    /// An operation timed out.
    public static let timeout = Self(.timeout, "timed out")
    /// The channel was closed locally.
    public static let closed = Self(.closed, "channel closed")

    /// The TLS handshake failed for `reason` (OpenSSL's error text).
    public static func tlsHandshakeFailed(_ reason: String) -> Self { Self(.tlsHandshakeFailed, reason) }
    /// A TLS error after the handshake.
    public static func tlsFailure(_ reason: String) -> Self { Self(.tlsFailure, reason) }
    /// A TLS context could not be configured.
    public static func tlsConfiguration(_ reason: String) -> Self { Self(.tlsConfiguration, reason) }
    /// `host` is not a usable address.
    public static func invalidAddress(_ host: String) -> Self {
        Self(.invalidAddress, "'\(host)' is not a numeric IPv4/IPv6 address or localhost")
    }

    /// Maps a failed system call, keeping its name and errno in the message.
    init(_ error: SystemCallError) {
        switch error.errno {
        case ECONNREFUSED: self.init(.connectionRefused, error.description)
        case ECONNRESET, EPIPE, ETIMEDOUT, ECONNABORTED: self.init(.connectionReset, error.description)
        default: self.init(.systemCall, error.description)
        }
    }

    /// Maps an untyped error from the event loop's registration calls, which throw `SystemCallError`.
    init(anyError error: any Error) {
        if let error = error as? SystemCallError {
            self.init(error)
        } else {
            self.init(.systemCall, "\(error)")
        }
    }
}
