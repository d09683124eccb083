import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization

/// Serves `RPCService`s over the Rave protocol on one listening port.
///
/// Always serves `rave.rpc.v1.Health/Check` (SERVING, NOT_SERVING while draining). Each request runs as a
/// Swift `Task`, except that a method with a synchronous handler, or a fast path that serves the call, is answered
/// in place on the loop; the connection's protocol state lives on its event loop (see `ServerConnection`).
public final class RPCServer: Sendable {
    public let configuration: RPCServerConfiguration
    let router: RPCRouter
    private let group: EventLoopGroup
    private let tls: TLSContext?
    private let listener = Mutex<Listener?>(nil)
    private let connections: ConnectionRegistry
    /// Counts connections against `configuration.connectionLimits`, or a count shared with other listeners.
    private let admission: ConnectionAdmission

    /// Prepares a server; `start()` opens the port.
    ///
    /// `access` decides which peers may call which services, and whose caller metadata is believed
    /// (`AccessPolicy`; backend services use the project's `TrustModel`).
    ///
    /// `fallback`, when given, serves every method no service has (the gateway proxies them); it finds the
    /// method name in `RequestContext.method`. `loopFallback` is asked first for every call but the Health
    /// check, served or not, and may serve it on the connection's loop instead (the gateway's single calls and
    /// batches); when it declines, the service or `fallback` serves the call.
    ///
    /// `admission`, when given, counts this server's connections together with another listener's (the gateway's
    /// HTTP port); its limits then apply instead of `configuration.connectionLimits`.
    public init(
        configuration: RPCServerConfiguration = RPCServerConfiguration(), services: [any RPCService],
        access: AccessPolicy, tls: TLSContext?, group: EventLoopGroup, logger: Logger = Logger(label: "rpc.server"),
        observer: any RPCServerObserver = SilentServerObserver(), fallback: RPCMethod.Handler? = nil,
        loopFallback: RPCLoopHandler? = nil, admission: ConnectionAdmission? = nil
    ) {
        self.configuration = configuration
        self.admission = admission ?? ConnectionAdmission(limits: configuration.connectionLimits)
        self.group = group
        self.tls = tls
        self.connections = ConnectionRegistry(inputBudget: InputBudget(limit: configuration.maxBufferedInput))
        self.router = RPCRouter(
            services: services, access: access, configuration: configuration, logger: logger, observer: observer,
            fallback: fallback, loopFallback: loopFallback)
    }

    /// Starts listening; connections are spread over the group's loops.
    public func start() throws(RPCError) {
        let router = self.router
        let connections = self.connections
        do {
            let listener = try Listener(
                group: group, host: configuration.host, port: configuration.port, tls: tls,
                options: configuration.channelOptions, admission: admission
            ) { channel in
                let connection = ServerConnection(channel: channel, router: router, registry: connections)
                channel.setHandler(connection)
            }
            self.listener.withLock { $0 = listener }
        } catch {
            throw .unavailable("cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        router.logger.info("listening", [("address", "\(configuration.host):\(localPort)")])
    }

    /// The port actually bound (useful with port 0).
    public var localPort: Int {
        listener.withLock { $0.map { Int($0.localPort) } ?? 0 }
    }

    /// Connections closed right after `accept` so far, because they were over a limit of `reason`.
    public func refusedConnections(_ reason: ConnectionRefusal) -> Int {
        listener.withLock { $0?.refusedConnections(reason) ?? 0 }
    }

    /// Connections accepted and not yet closed, and those of them still in their TLS handshake.
    public var connectionCounts: (open: Int, handshaking: Int) {
        listener.withLock { $0?.connectionCounts ?? (0, 0) }
    }

    /// Bytes of unfinished frames the server's connections hold (see `RPCServerConfiguration.maxBufferedInput`).
    public var bufferedInputBytes: Int { connections.inputBudget.current }

    /// REQUEST frames over the early limit refused so far because `maxBufferedInput` had no room for them.
    public var framesRefusedForBudget: Int { connections.inputBudget.refusedFrames }

    /// Stops accepting, sends GOAWAY on every connection, and returns once in-flight calls finished (or the
    /// grace period ended) and every connection closed.
    public func drain() async {
        router.health.isDraining.store(true, ordering: .releasing)
        listener.withLock { listener in
            listener?.close()
            listener = nil
        }
        for connection in connections.all {
            connection.channel.loop.execute { connection.startDraining() }
        }
        await connections.waitUntilEmpty()
    }

    /// Same as `drain()`: in-flight work is never dropped on purpose, only after the grace period.
    public func shutdown() async {
        await drain()
    }
}

/// Routes method names to handlers and carries what every connection of a server shares.
final class RPCRouter: Sendable {
    /// What the server knows of one method name it serves or its fallback routes, found with one lookup per call.
    ///
    /// A class: a call holds its route while it is read and started, and one reference costs one retain where a
    /// struct of two closures and a rule cost several.
    final class Route: Sendable {
        /// The method's full name (the string every call of it shares).
        let name: String
        /// Nil for a name the fallback serves (`RPCServerConfiguration.fallbackMethodNames`).
        let handler: RPCMethod.Handler?
        /// Tried first on the loop: a synchronous handler, or a fast path that may decline (`RPCMethod.fastPath`).
        let fastPath: RPCMethod.FastPath?
        /// Who may call it (`access`'s rule, decided once here).
        let rule: AccessPolicy.Peers
        /// Whether an OK answer is logged at debug (`RPCServerConfiguration.quietMethods`).
        let quietWhenOK: Bool
        /// Whether the router's `loopFallback` may serve it: every method but the built-in Health check, which
        /// always runs as written.
        let allowsLoopFallback: Bool

        init(
            name: String, handler: RPCMethod.Handler?, fastPath: RPCMethod.FastPath?, rule: AccessPolicy.Peers,
            quietWhenOK: Bool
        ) {
            self.name = name
            self.handler = handler
            self.fastPath = fastPath
            self.rule = rule
            self.quietWhenOK = quietWhenOK
            self.allowsLoopFallback = name != HealthCheck.methodName
        }
    }

    /// Every method served, and every name the fallback lists; any other name is unknown (and its metric label is
    /// `RPCServerConfiguration.unknownMethodLabel`).
    let routes: [String: Route]
    /// `routes` by the UTF-8 of their names: a request's route without a string made of its method.
    let routesByName: MethodTable<Route>
    /// Serves methods not in `methods` (the gateway's proxy); the method name is in `RequestContext.method`.
    let fallback: RPCMethod.Handler?
    /// Tried first for every call but the Health check, on the connection's loop; saves a Task and two thread
    /// hand-offs per call.
    let loopFallback: RPCLoopHandler?
    let serviceNames: Set<String>
    let access: AccessPolicy
    let configuration: RPCServerConfiguration
    let logger: Logger
    let observer: any RPCServerObserver
    let health: HealthState
    private let requestCounter = Atomic<UInt64>(0)
    /// The UTF-8 of the per-server prefix of request ids: 8 hex digits.
    let requestIDPrefix: [UInt8]

    init(
        services: [any RPCService], access: AccessPolicy, configuration: RPCServerConfiguration, logger: Logger,
        observer: any RPCServerObserver, fallback: RPCMethod.Handler? = nil, loopFallback: RPCLoopHandler? = nil
    ) {
        self.fallback = fallback
        self.loopFallback = loopFallback
        var methods: [String: RPCMethod] = [:]
        var names: Set<String> = []
        for service in services {
            names.insert(type(of: service).serviceName)
            for method in service.methods { methods[method.name] = method }
        }
        self.serviceNames = names
        self.configuration = configuration
        self.logger = logger
        self.observer = observer
        self.requestIDPrefix = Array(String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16).utf8)
        let health = HealthState(serviceNames: names)
        methods[HealthCheck.methodName] = .synchronous(
            name: HealthCheck.methodName, HealthCheck.handler(health: health))
        self.health = health
        self.access = access
        func route(_ name: String, _ method: RPCMethod?) -> Route {
            Route(
                name: name, handler: method?.handler, fastPath: method?.fastPath,
                rule: access.peers(forMethod: name), quietWhenOK: configuration.quietMethods.contains(name))
        }
        var routes = Dictionary(uniqueKeysWithValues: configuration.fallbackMethodNames.map { ($0, route($0, nil)) })
        for (name, method) in methods { routes[name] = route(name, method) }
        self.routes = routes
        self.routesByName = MethodTable(routes)
    }

    var isDraining: Bool { health.isDraining.load(ordering: .acquiring) }

    /// A process-unique, cheap request id: a random per-server prefix and a counter.
    func nextRequestID() -> String {
        requestID(number: requestCounter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// Reserves `count` request numbers for one connection, which numbers its calls from the first one returned
    /// without touching the counter the server's loops share (an atomic add per call moved its cache line between
    /// the loops' cores on every call).
    func reserveRequestNumbers(_ count: UInt64) -> UInt64 {
        requestCounter.wrappingAdd(count, ordering: .relaxed).newValue &- count &+ 1
    }

    /// The request id of `number`: the per-server prefix, "-", and the number in lowercase hex.
    func requestID(number: UInt64) -> String {
        RequestIDs.text(prefix: requestIDPrefix, number: number)
    }
}

/// How a server spells its request ids.
enum RequestIDs {
    /// `prefix`, "-", and `number` in lowercase hex.
    static func text(prefix: [UInt8], number: UInt64) -> String {
        // Written by hand: concatenating `String(number, radix: 16)` (generic) cost about 1 % of a proxied
        // call's CPU, while this builds the id in place (and up to 15 bytes it is a small string, no allocation).
        var digits = 1
        while digits < 16 && number >> (4 * UInt64(digits)) != 0 { digits += 1 }
        return String(unsafeUninitializedCapacity: prefix.count + 1 + digits) { buffer in
            var index = 0
            for byte in prefix {
                buffer[index] = byte
                index += 1
            }
            buffer[index] = UInt8(ascii: "-")
            index += 1
            for position in (0..<digits).reversed() {
                let nibble = UInt8(truncatingIfNeeded: number >> (4 * UInt64(position))) & 0xF
                buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                index += 1
            }
            return index
        }
    }
}

/// The built-in Health service, written against bytes because RaveServices (where its generated handler
/// protocol lives) sits above this module.
enum HealthCheck {
    static let methodName = "rave.rpc.v1.Health/Check"

    static func handler(health: HealthState) -> RPCMethod.SynchronousHandler {
        { request, _ in
            let query = try RpcV1.HealthCheckRequest(protobufBytes: request)
            var response = RpcV1.HealthCheckResponse()
            let draining = health.isDraining.load(ordering: .acquiring)
            if !query.service.isEmpty && !health.serviceNames.contains(query.service) {
                response.status = .serviceUnknown
            } else {
                response.status = draining ? .notServing : .serving
            }
            return response.protobufBytes()
        }
    }
}

/// What the Health service reports: whether the server drains, and which services it has.
final class HealthState: Sendable {
    let serviceNames: Set<String>
    let isDraining = Atomic<Bool>(false)

    init(serviceNames: Set<String>) {
        self.serviceNames = serviceNames
    }
}

/// The open connections of a server, so `drain()` can reach them and wait for them to close, and the input
/// budget they share. (Connections per address are counted by the listener, from `accept`.)
final class ConnectionRegistry: Sendable {
    private struct State {
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    let inputBudget: InputBudget

    init(inputBudget: InputBudget = InputBudget(limit: RPCServerConfiguration().maxBufferedInput)) {
        self.inputBudget = inputBudget
    }

    var all: [ServerConnection] { state.withLock { Array($0.connections.values) } }

    /// Registers `connection`; returns the number of open connections.
    func add(_ connection: ServerConnection) -> Int {
        state.withLock {
            $0.connections[ObjectIdentifier(connection)] = connection
            return $0.connections.count
        }
    }

    func remove(_ connection: ServerConnection) -> Int {
        let (count, waiters) = state.withLock { state -> (Int, [CheckedContinuation<Void, Never>]) in
            guard state.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else {
                return (state.connections.count, [])
            }
            guard state.connections.isEmpty else { return (state.connections.count, []) }
            let waiters = state.waiters
            state.waiters = []
            return (0, waiters)
        }
        for waiter in waiters { waiter.resume() }
        return count
    }

    func waitUntilEmpty() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.connections.isEmpty { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
