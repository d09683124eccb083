/// The rule for an application's allowed web origins (`ApplicationSettings.allowed_origins`), which the gateway's
/// HTTP/JSON front door compares exactly with a browser's `Origin` header (docs/gateway.md, "CORS").
///
/// An origin is what a browser sends: a scheme, a lower-case host and a port only when it is not the scheme's
/// default, nothing else. Anything a browser would never send could never match, so it is refused with what is
/// wrong rather than stored to fail silently; and a wildcard or a path would suggest a looser match than the exact
/// one the gateway makes.
enum AllowedOrigins {
    /// Origins one application may list.
    static let maximumCount = 20
    /// Characters one origin may have.
    static let maximumLength = 256
    /// Hosts that may be served over plain http (development on the player's own machine).
    static let localHosts: Set<String> = ["localhost", "127.0.0.1"]

    /// The list, or INVALID_ARGUMENT naming the first origin that breaks the rule and how; `field` names the list.
    static func check(_ origins: [String], field: String) throws(IdentityError) -> [String] {
        guard origins.count <= maximumCount else {
            throw .invalidArgument("\(field) may hold at most \(maximumCount) origins, got \(origins.count)")
        }
        var seen: [String: Int] = [:]
        for (index, origin) in origins.enumerated() {
            if let problem = problem(with: origin) {
                throw .invalidArgument(
                    "\(field)[\(index)] \(Validation.quoted(origin)) \(problem); an origin is https://host[:port] "
                        + "(or http://localhost[:port] or http://127.0.0.1[:port])")
            }
            if let earlier = seen[origin] {
                throw .invalidArgument("\(field)[\(index)] repeats \(field)[\(earlier)] (\(Validation.quoted(origin)))")
            }
            seen[origin] = index
        }
        return origins
    }

    /// What is wrong with `origin`, worded to follow it; nil when it is a valid origin.
    static func problem(with origin: String) -> String? {
        guard !origin.isEmpty else { return "is empty" }
        guard origin.unicodeScalars.count <= maximumLength else {
            return "is longer than \(maximumLength) characters"
        }
        guard !origin.contains("*") else { return "holds a wildcard; list every origin itself" }
        guard origin.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            return "holds a space, a control character or a character outside ASCII (write a host in its "
                + "xn-- form)"
        }
        let scheme: String
        if origin.hasPrefix("https://") {
            scheme = "https"
        } else if origin.hasPrefix("http://") {
            scheme = "http"
        } else {
            return "must start with https:// (http:// only for localhost and 127.0.0.1)"
        }
        let authority = origin.dropFirst(scheme.count + 3)
        if authority.contains("@") { return "must not hold user info (name@)" }
        if authority.contains("/") { return "must not have a path, not even a trailing \"/\"" }
        if authority.contains("?") { return "must not have a query" }
        if authority.contains("#") { return "must not have a fragment" }
        if authority.hasPrefix("[") { return "names an IPv6 address, which is not supported" }
        var host = Substring(authority)
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            if let problem = portProblem(authority[authority.index(after: colon)...], scheme: scheme) {
                return problem
            }
        }
        if let problem = hostProblem(host) { return problem }
        if scheme == "http" && !localHosts.contains(String(host)) {
            return "uses http://, which is allowed only for localhost and 127.0.0.1"
        }
        return nil
    }

    private static func portProblem(_ port: Substring, scheme: String) -> String? {
        guard !port.isEmpty, port.allSatisfy(\.isASCIIDigit), port.first != "0", let value = Int(port),
            (1...65_535).contains(value)
        else { return "must have a port of 1…65535 after the \":\"" }
        let defaultPort = scheme == "https" ? 443 : 80
        guard value != defaultPort else {
            return "must leave out the default port \(defaultPort) (browsers send the origin without it)"
        }
        return nil
    }

    private static func hostProblem(_ host: Substring) -> String? {
        guard !host.isEmpty else { return "has no host" }
        guard host == host.lowercased() else { return "must have a lower-case host (browsers send it so)" }
        guard host.count <= 253 else { return "has a host longer than 253 characters" }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count),
                label.allSatisfy({ $0.isASCIIDigit || ("a"..."z").contains($0) || $0 == "-" }),
                label.first != "-", label.last != "-"
            else {
                return "has a host that is not a name of letters, digits and hyphens between dots"
            }
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
