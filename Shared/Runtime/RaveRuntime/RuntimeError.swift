/// A failure of the service runtime: bad configuration, a service that failed, an admin server that could not start.
public struct RuntimeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure, so callers can react without parsing `message`.
    public struct Kind: Hashable, Sendable {
        let name: String

        /// An environment variable had a value the runtime cannot use.
        public static let invalidConfiguration = Kind(name: "invalid configuration")
        /// A service's `run()` threw.
        public static let serviceFailed = Kind(name: "service failed")
        /// Start-up could not finish (a port in use, a database unreachable, migrations failing).
        public static let startupFailed = Kind(name: "start-up failed")
    }

    public var kind: Kind
    /// What was wrong and, for configuration, what is allowed.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.name): \(message)" }

    /// `variable` had `value`; `allowed` says what it may be.
    public static func invalidValue(_ variable: String, _ value: String, allowed: String) -> RuntimeError {
        RuntimeError(.invalidConfiguration, "\(variable) must be \(allowed), got \"\(value)\"")
    }
}
