import RaveHTTP
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// The HTTP/JSON front door's port (`RAVE_GATEWAY_HTTP_LISTEN`): TLS with the gateway's certificate, client
/// certificates requested, ALPN `h2` then `http/1.1` (HTTP/2 with up to 100 streams per connection), connections
/// counted with the binary port's.
///
/// Only sockets live here: `HTTPFrontDoor` decides, `FrontDoorCaller` runs the calls through the pipeline. On
/// shutdown it stops accepting, lets requests under way finish (for at most the grace period) and closes.
final class FrontDoorServer: Service {
    let name = "http-front-door"
    private let server: HTTPServer
    private let stopped = ShutdownLatch()
    private let gracePeriod: Duration

    /// Binds the port now, so a conflict stops start-up.
    init(
        address: SocketAddress, group: EventLoopGroup, tls: TLSContext, options: ChannelOptions,
        admission: ConnectionAdmission, settings: HTTPServerSettings, responder: FrontDoorResponder,
        gracePeriod: Duration
    ) throws(RuntimeError) {
        do {
            server = try HTTPServer(
                group: group, host: address.host, port: address.port, tls: tls, options: options,
                admission: admission, settings: settings, responder: responder)
        } catch {
            throw RuntimeError(.startupFailed, "cannot listen on RAVE_GATEWAY_HTTP_LISTEN \(address): \(error)")
        }
        self.gracePeriod = gracePeriod
    }

    /// The bound port.
    var localPort: Int { server.localPort }

    func run() async throws {
        await stopped.wait()
        await server.drain(gracePeriod: gracePeriod)
    }

    func shutdown() async {
        stopped.open()
    }

    /// What one request may be: a head of at most 16 KiB and 100 fields (431 beyond), a body of at most
    /// `maxBodyBytes` (`RAVE_GATEWAY_MAX_REQUEST`; 413 beyond).
    static func requestLimits(maxBodyBytes: Int) -> HTTPLimits {
        HTTPLimits(maxHeadBytes: 16 << 10, maxHeaderCount: 100, maxBodyBytes: maxBodyBytes)
    }

    /// The TLS settings of the port: the gateway's pair, client certificates requested, ALPN `h2` and `http/1.1`.
    static func tlsConfiguration(_ service: ServiceConfiguration) -> TLSConfiguration {
        var configuration = TLSConfiguration.server(
            certificateChainPath: service.tlsCertificatePath, privateKeyPath: service.tlsPrivateKeyPath,
            trustRootsPath: service.tlsCertificateAuthorityPath)
        configuration.requestClientCertificate = true
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }
}

/// Answers the front door's requests on the connection's loop: `HTTPFrontDoor`'s immediate answers at once, calls
/// by `FrontDoorCaller`, on the loop when it can (`CallPipeline.startProxy`), else off it.
struct FrontDoorResponder: HTTPResponder {
    let frontDoor: HTTPFrontDoor
    let caller: FrontDoorCaller
    let metrics: FrontDoorMetrics

    func answer(_ request: HTTPServerRequest, from connection: HTTPConnectionInfo) -> HTTPAnswer {
        let started = monotonicNanoseconds()
        switch frontDoor.decide(request, makeRequestID: RequestIDs.make) {
        case .respond(let response):
            metrics.record(response, since: started)
            return .immediate(response)
        case .download(let download):
            let peer = Self.peer(connection)
            let caller = self.caller
            let metrics = self.metrics
            return .deferred {
                let response = await caller.download(download, peer: peer)
                metrics.record(response, since: started)
                return response
            }
        case .call(let call):
            let peer = Self.peer(connection)
            let caller = self.caller
            let metrics = self.metrics
            return .onLoop(
                start: { loop, respond in
                    caller.start(call, peer: peer, loop: loop) { response in
                        metrics.record(response, since: started)
                        respond(response)
                    }
                },
                otherwise: {
                    let response = await caller.execute(call, peer: peer)
                    metrics.record(response, since: started)
                    return response
                })
        }
    }

    private static func peer(_ connection: HTTPConnectionInfo) -> PeerIdentity {
        PeerIdentity(
            address: connection.remoteAddress, certificateCommonName: connection.peerCertificate?.commonName,
            role: PeerRole(certificate: connection.peerCertificate))
    }

    func answer(_ error: HTTPParseError, from connection: HTTPConnectionInfo) -> HTTPServerResponse {
        let response = HTTPFrontDoor.parseFailure(error, requestID: RequestIDs.make())
        metrics.record(response, since: monotonicNanoseconds())
        return response
    }
}

/// Runs a front-door call through the same code as a binary call.
///
/// On the client connection's loop when `CallPipeline.startProxy` takes it (the binary port's loop path), else
/// `CallPipeline.proxy` for a routed method and `GatewayHandler.batch` for a batch. Each call is logged as the
/// binary port logs one (method, status, latency, request id).
struct FrontDoorCaller: Sendable {
    let pipeline: CallPipeline
    let transcoder: FrontDoorTranscoder
    let logger: Logger

    /// Starts `call` on `loop`, the client connection's, and calls `respond` there with its response (perhaps
    /// before returning); returns what cancels it, or nil when the loop path does not take it (then `execute`).
    func start(
        _ call: FrontDoorCall, peer: PeerIdentity, loop: EventLoop,
        respond: @escaping (HTTPServerResponse) -> Void
    ) -> (() -> Void)? {
        let started = monotonicNanoseconds()
        let request: (bytes: [UInt8], batchMethods: [String])
        do {
            request = try transcoder.request(call)
        } catch {
            respond(finish(call, .failure(error), since: started))
            return {}
        }
        return pipeline.startProxy(request: request.bytes, context: context(call, peer: peer), loop: loop) {
            respond(finish(call, $0.map { ($0, request.batchMethods) }, since: started))
        }
    }

    /// Runs `call` off the loop.
    func execute(_ call: FrontDoorCall, peer: PeerIdentity) async -> HTTPServerResponse {
        let started = monotonicNanoseconds()
        let outcome: Result<([UInt8], [String]), any Error>
        do {
            let context = context(call, peer: peer)
            let request = try transcoder.request(call)
            if call.isBatch {
                let batch = try GatewayV1.BatchRequest(protobufBytes: request.bytes)
                let response = try await GatewayHandler(pipeline: pipeline).batch(batch, context: context)
                outcome = .success((response.protobufBytes(), request.batchMethods))
            } else {
                outcome = .success((try await pipeline.proxy(request: request.bytes, context: context), []))
            }
        } catch {
            outcome = .failure(error)
        }
        return finish(call, outcome, since: started)
    }

    private func context(_ call: FrontDoorCall, peer: PeerIdentity) -> RequestContext {
        RequestContext(
            requestID: call.requestID, method: call.method, deadline: monotonicNanoseconds() &+ call.timeout,
            metadata: call.metadata, peer: peer, caller: nil, connectionLogger: logger)
    }

    /// The response to `call` whose backend answered `outcome` (the response bytes and, for a batch, its calls'
    /// methods), logged.
    private func finish<Failure: Error>(
        _ call: FrontDoorCall, _ outcome: Result<([UInt8], [String]), Failure>, since started: UInt64
    ) -> HTTPServerResponse {
        let response: HTTPServerResponse
        let code: StatusCode
        do {
            let (bytes, batchMethods) = try outcome.get()
            let body = try transcoder.response(bytes, for: call, batchMethods: batchMethods)
            response = HTTPFrontDoor.success(body, encoding: call.responseEncoding, headers: call.headers)
            code = .ok
        } catch {
            let error = RPCError(mapping: error, requestID: call.requestID)
            response = HTTPFrontDoor.failure(error, headers: call.headers)
            code = error.code
        }
        let elapsed = monotonicNanoseconds() &- started
        logger.info(
            "http call finished",
            [
                ("method", MethodNames.printable(call.method)), ("status", "\(code)"),
                ("http_status", String(response.status.code)), ("latency_us", String(elapsed / 1000)),
                ("request_id", call.requestID),
            ])
        return response
    }
}

/// The front door's metrics: requests by status class and their latency, series registered up front (a closed
/// label set whatever clients send).
struct FrontDoorMetrics: Sendable {
    private let requests: [Counter]
    private let durations: [Histogram]

    init(registry: MetricsRegistry) {
        let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"]
        requests = classes.map {
            registry.counter(
                "http_server_requests_total", help: "HTTP requests answered by the front door, by status class.",
                labels: [("http.status_class", $0)])
        }
        durations = classes.map {
            registry.histogram(
                "http.server.duration", help: "Time from a complete HTTP request to its response, in seconds.",
                labels: [("http.status_class", $0)])
        }
    }

    func record(_ response: HTTPServerResponse, since started: UInt64) {
        let index = min(max(response.status.code / 100, 1), 5) - 1
        requests[index].increment()
        let now = monotonicNanoseconds()
        durations[index].observe(nanoseconds: now > started ? now - started : 0)
    }
}

/// Request ids the front door makes up for requests without a usable `X-Request-Id`: 32 hex digits.
enum RequestIDs {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
