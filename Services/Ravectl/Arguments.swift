/// A command line's options, parsed by hand: `--name value` pairs, `--flag` switches, and positionals.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    private var used: Set<String> = []

    /// Parses `arguments`; every option in `valueOptions` takes the next argument as its value.
    init(_ arguments: ArraySlice<String>, valueOptions: Set<String>) throws(UsageError) {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                positionals.append(argument)
                continue
            }
            let name = String(argument.dropFirst(2))
            guard valueOptions.contains(name) else {
                throw UsageError("unknown option --\(name)")
            }
            guard index < arguments.endIndex else { throw UsageError("--\(name) needs a value") }
            values[name] = arguments[index]
            index += 1
        }
    }

    /// The value of `--name`, if given.
    func value(_ name: String) -> String? { values[name] }

    /// The value of `--name`, or a usage error naming it.
    func required(_ name: String) throws(UsageError) -> String {
        guard let value = values[name] else { throw UsageError("--\(name) is required") }
        return value
    }

    /// The value of `--name` as an integer in `range`, or `defaultValue` when absent.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError("--\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound), got \(text)")
        }
        return value
    }
}

/// A wrong command line; printed with the usage text, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// Splits "host:port" (or "[v6]:port").
func parseAddress(_ text: String) throws(UsageError) -> (host: String, port: Int) {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
        (1...65535).contains(port)
    else { throw UsageError("address must be HOST:PORT with a port in 1…65535, got \(text)") }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw UsageError("address must name a host, got \(text)") }
    return (host, port)
}
