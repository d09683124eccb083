import Glibc

/// Turns a host name into numeric addresses, so services can name their peers by DNS name (Kubernetes headless
/// services, systemd deployments) as well as by IP literal.
///
/// `getaddrinfo` blocks, so it runs on a short-lived thread of its own, never on an event loop or Swift's
/// cooperative pool. Numeric hosts and `localhost` are returned as they are, without a thread.
public enum NameResolver {
    /// The numeric IPv4 and IPv6 addresses of `host`, in the resolver's order (duplicates removed).
    public static func addresses(of host: String) async throws(TransportError) -> [String] {
        if isNumeric(host) || host == "localhost" { return [host] }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Lookup, Never>) in
            let started = startThread { continuation.resume(returning: lookUp(host)) }
            if !started { continuation.resume(returning: .failure("could not start a resolver thread")) }
        }
        switch result {
        case .addresses(let addresses) where !addresses.isEmpty: return addresses
        case .addresses: throw TransportError(.invalidAddress, "'\(host)' has no IPv4 or IPv6 address")
        case .failure(let reason): throw TransportError(.invalidAddress, "cannot resolve '\(host)': \(reason)")
        }
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    public static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    enum Lookup: Sendable, Equatable {
        case addresses([String])
        case failure(String)
    }

    static func lookUp(_ host: String) -> Lookup {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { return .failure(String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry {
            if let text = numericHost(current.pointee), !addresses.contains(text) { addresses.append(text) }
            entry = current.pointee.ai_next
        }
        return .addresses(addresses)
    }

    private static func numericHost(_ info: addrinfo) -> String? {
        guard let address = info.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = getnameinfo(address, info.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
        guard status == 0 else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs `body` on a new detached thread; false when the thread could not be created.
    private static func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(ThreadBody(body))
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let body = Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue()
                body.run()
                return nil
            }, box.toOpaque())
        guard status == 0 else {
            box.release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}

/// A closure carried through `pthread_create`'s untyped argument.
private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
