import RaveRPC
import RaveRuntime

/// Every failure the push service reports on purpose; its kind decides the status (`StatusError.rpcError`).
struct PushError: StatusError {
    /// What went wrong, which decides the status code.
    enum Kind: Hashable, Sendable {
        case invalidArgument
        case notFound
        /// The id was used before for a different request.
        case conflictingReplay
        /// A provider, key or endpoint is misconfigured.
        case configuration
        /// The provider could not be reached or answered something unusable.
        case provider
    }

    var kind: Kind
    var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func invalidArgument(_ message: String) -> PushError { PushError(.invalidArgument, message) }
    static func notFound(_ message: String) -> PushError { PushError(.notFound, message) }

    var description: String { "\(kind): \(message)" }

    var code: StatusCode {
        switch kind {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .conflictingReplay: .alreadyExists
        case .configuration: .failedPrecondition
        case .provider: .unavailable
        }
    }
}

/// The ranges of push's numeric request fields, as the proto comments state them; the tests compare the two.
enum RequestLimits {
    static let inboxPageSizes = RequestRange("page_size", 1...100, zeroMeans: 20)
    static let inboxOffsets = RequestRange("offset", 0...100_000)

    /// Every range above with the message whose field it checks.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.push.v1.ListInboxRequest", inboxPageSizes), ("rave.push.v1.ListInboxRequest", inboxOffsets),
    ]
}
