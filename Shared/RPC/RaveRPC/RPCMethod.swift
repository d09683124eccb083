import RaveTransport

/// One routable method: its full name and a handler working on encoded messages.
///
/// Generated code builds these from a service's handler protocol; the server routes by `name`.
public struct RPCMethod: Sendable {
    public typealias Handler = @Sendable (_ request: [UInt8], _ context: RequestContext) async throws -> [UInt8]
    /// A handler that answers without waiting for anything (no I/O, no lock held for long): from memory.
    ///
    /// `request` is the message's bytes where they arrived (the server's read buffer), valid only during the call.
    public typealias SynchronousHandler =
        @Sendable (_ request: UnsafeRawBufferPointer, _ context: RequestContext) throws -> [UInt8]
    /// Answers a call from memory when it can, without waiting for anything; nil declines, and `handler` serves
    /// the call (with the same request and context).
    ///
    /// `request` is the message's bytes where they arrived (the server's read buffer), valid only during the call:
    /// a call answered in place copies nothing out but what the handler decodes.
    public typealias FastPath =
        @Sendable (_ request: UnsafeRawBufferPointer, _ context: RequestContext) throws -> [UInt8]?

    /// "rave.<area>.v1.<Service>/<Method>".
    public let name: String
    public let handler: Handler
    /// A synchronous method's handler (which never declines), or a method's fast path.
    ///
    /// Tried first, in place on the connection's event loop without a Task, by a server whose handlers run there
    /// (`RPCServerConfiguration.runsHandlersOnEventLoop`); elsewhere `handler` serves every call.
    public let fastPath: FastPath?

    public init(name: String, handler: @escaping Handler) {
        self.init(name: name, handler: handler, fastPath: nil)
    }

    /// A method whose `fastPath` answers what it can from memory, and `handler` the rest; the two must give the
    /// same answer to any call both can serve.
    public init(name: String, handler: @escaping Handler, fastPath: FastPath?) {
        self.name = name
        self.handler = handler
        self.fastPath = fastPath
    }

    /// A method answered in place on the connection's event loop; `handler` must not block the loop.
    ///
    /// (A factory rather than an initializer, so a trailing closure without `await` still makes an async method.)
    public static func synchronous(name: String, _ handler: @escaping SynchronousHandler) -> RPCMethod {
        RPCMethod(
            name: name, handler: { request, context in try request.withUnsafeBytes { try handler($0, context) } },
            fastPath: { request, context in try handler(request, context) })
    }
}

/// Serves a call on the connection's event loop without a Task: for a proxy whose work is another call.
///
/// Runs on `loop`. Returns nil to decline (the server's async fallback then serves the call), else a function
/// that cancels the call; `completion` must then run on `loop` once, possibly before this returns, and not at
/// all once the server called the cancel function (it has answered the client itself).
public typealias RPCLoopHandler =
    @Sendable (
        _ request: [UInt8], _ context: RequestContext, _ loop: EventLoop,
        _ completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) -> (() -> Void)?

/// A service implementation the server can route to; generated handler protocols refine it.
public protocol RPCService: Sendable {
    /// The fully qualified service name ("rave.echo.v1.Echo").
    static var serviceName: String { get }
    /// Every method of the service, bound to this implementation.
    var methods: [RPCMethod] { get }
}

/// Options for one outgoing call.
public struct CallOptions: Sendable {
    /// How long the caller waits; also sent to the server as the request's deadline.
    public var timeout: Duration
    /// Request metadata (authorization, idempotency key, trace id, caller identity).
    public var metadata: [String: String]
    /// Failures marked not-processed are retried up to this many times (on a fresh connection if needed).
    public var maxRetries: Int
    /// Metadata already in wire form, sent after `metadata` (a key in both is read with this value): a proxy
    /// passes a client's metadata on this way without decoding and encoding it again.
    public var encodedMetadata: EncodedMetadata

    public init(
        timeout: Duration = .seconds(10), metadata: [String: String] = [:], maxRetries: Int = 2,
        encodedMetadata: EncodedMetadata = EncodedMetadata()
    ) {
        self.timeout = timeout
        self.metadata = metadata
        self.maxRetries = maxRetries
        self.encodedMetadata = encodedMetadata
    }
}

/// Something that can carry a call to a server: a connection, a pool, or the gateway's router.
///
/// Generated typed clients are thin wrappers over a caller.
public protocol RPCCaller: Sendable {
    /// Sends an encoded request and returns the encoded response, or throws `RPCError`.
    func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8]
}
