import RaveRuntime

/// A service that receives events: a name for logs and errors, and where its RPC server listens.
public struct EventSinkAddress: Hashable, Sendable, CustomStringConvertible {
    /// The variable `fromEnvironment` reads the sinks from.
    public static let environmentVariable = "RAVE_EVENT_SINKS"

    public var name: String
    public var host: String
    public var port: Int

    public init(name: String, host: String, port: Int) {
        self.name = name
        self.host = host
        self.port = port
    }

    public var description: String { "\(name)=\(SocketAddress(host: host, port: port))" }

    /// Parses `name=host:port[,name=host:port…]` (empty entries are skipped, so an empty text means no sinks); names must be unique.
    ///
    /// Errors name `variable` and the offending entry, so a bad deployment stops at start-up.
    public static func parseList(
        _ text: String, variable: String = environmentVariable
    ) throws(RuntimeError) -> [EventSinkAddress] {
        var sinks: [EventSinkAddress] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingSpaces()
            guard !trimmed.isEmpty else { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, Self.isValidName(parts[0]),
                let address = SocketAddress(parsing: String(parts[1])), address.port > 0
            else {
                throw .invalidValue(
                    variable, trimmed,
                    allowed: "a comma-separated list of name=host:port entries (name: letters, digits, -, _)")
            }
            let name = String(parts[0])
            guard !sinks.contains(where: { $0.name == name }) else {
                throw RuntimeError(.invalidConfiguration, "\(variable) names the sink \"\(name)\" twice")
            }
            sinks.append(EventSinkAddress(name: name, host: address.host, port: address.port))
        }
        return sinks
    }

    private static func isValidName(_ name: Substring) -> Bool {
        !name.isEmpty
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
