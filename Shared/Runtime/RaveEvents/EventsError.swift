/// A failure of event delivery: a sink that did not acknowledge, or an event that cannot be sent.
public struct EventsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure, so callers can react without parsing `message`.
    public struct Kind: Hashable, Sendable {
        let name: String

        /// One or more sinks failed or did not answer; the publisher retries the event later.
        public static let sinkFailed = Kind(name: "sink failed")
    }

    public var kind: Kind
    /// Which sinks failed and why.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.name): \(message)" }
}
