import RaveHTTP
import RaveRPC

/// How a call's request or response body is written.
enum BodyEncoding: Sendable, Hashable {
    /// protobuf's canonical JSON mapping.
    case json
    /// The encoded message.
    case protobuf

    var contentType: String {
        switch self {
        case .json: "application/json"
        case .protobuf: "application/x-protobuf"
        }
    }
}

/// A request the front door turns into a call through the gateway's pipeline.
struct FrontDoorCall: Sendable, Equatable {
    /// The method called (`rave.gateway.v1.Gateway/Batch` for a batch).
    var method: String
    var isBatch: Bool
    var body: [UInt8]
    var requestEncoding: BodyEncoding
    var responseEncoding: BodyEncoding
    /// The call's metadata: `authorization`, `idempotency-key`, `trace-id`.
    var metadata: [String: String]
    /// Nanoseconds the call may take.
    var timeout: UInt64
    var requestID: String
    /// Headers every answer to this call carries: `X-Request-Id`, `Cache-Control`, and CORS when it applies.
    var headers: [HTTPHeader]
}

/// The front door's rules (docs/gateway.md, "HTTP/JSON front door"), without sockets: a request in, either an
/// answer at once (CORS, static files, the OpenAPI document, refusals) or a call for the pipeline; and how a
/// call's outcome becomes a response (status mapping, error body, headers).
struct HTTPFrontDoor: Sendable {
    struct Settings: Sendable {
        /// Largest request body (`RAVE_GATEWAY_MAX_REQUEST`); larger: 413.
        var maxRequestBytes: Int
        /// A call's deadline when `X-Rave-Timeout-Ms` is absent or 0.
        var defaultTimeout: Duration
        /// The longest deadline a call may ask for.
        var maxTimeout: Duration

        init(maxRequestBytes: Int, defaultTimeout: Duration = .seconds(30), maxTimeout: Duration = .seconds(300)) {
            self.maxRequestBytes = maxRequestBytes
            self.defaultTimeout = defaultTimeout
            self.maxTimeout = maxTimeout
        }
    }

    /// What the front door does with a request.
    enum Decision: Sendable, Equatable {
        case respond(HTTPServerResponse)
        case call(FrontDoorCall)
        /// An account export's archive, fetched chunk by chunk (`FrontDoorDownload`).
        case download(FrontDoorDownload)
    }

    static let batchMethod = "rave.gateway.v1.Gateway/Batch"
    static let apiPrefix = "/v1/"
    static let batchPath = "/v1/batch"
    static let openAPIPath = "/v1/openapi.json"

    let settings: Settings
    let cors: CORSPolicy
    let staticFiles: StaticFiles
    /// The OpenAPI document served at `/v1/openapi.json`; nil answers 404 there.
    let openAPIDocument: [UInt8]?
    /// The methods a call may name (`MethodRoute.knownMethods`); any other name is 404 before anything else.
    let knownMethods: Set<String>

    /// What to do with `request`; `makeRequestID` is asked when the request brings no usable `X-Request-Id`.
    func decide(_ request: HTTPServerRequest, makeRequestID: () -> String) -> Decision {
        let requestID = Self.validRequestID(request.header("x-request-id")) ?? makeRequestID()
        var headers = Self.commonHeaders(requestID: requestID)
        switch cors.verdict(origin: request.header("origin"), host: request.header("host")) {
        case .refused(let origin):
            return .respond(
                Self.failure(
                    .permissionDenied("origin \(Self.printable(origin)) may not call this gateway from a browser"),
                    headers: headers))
        case .allowed(let origin):
            if request.method == "OPTIONS", request.header("access-control-request-method") != nil {
                return .respond(
                    HTTPServerResponse(
                        status: .noContent, headers: headers + CORSPolicy.preflightHeaders(origin: origin)))
            }
            headers += CORSPolicy.responseHeaders(origin: origin)
        case .noOrigin:
            break
        }
        let path = request.path
        if path.hasPrefix(Self.apiPrefix) {
            return api(request, path: path, requestID: requestID, headers: headers)
        }
        if staticFiles.covers(path) { return .respond(staticFile(request, path: path, headers: headers)) }
        return .respond(
            Self.failure(
                .notFound("no such path \(Self.printable(String(path))); the API is under /v1/"), headers: headers))
    }

    // MARK: - /v1/

    private func api(
        _ request: HTTPServerRequest, path: Substring, requestID: String, headers: [HTTPHeader]
    ) -> Decision {
        if path == Self.openAPIPath {
            switch request.method {
            case "GET", "HEAD":
                guard let openAPIDocument else {
                    return .respond(
                        Self.failure(
                            .notFound("the OpenAPI document is not available on this gateway"), headers: headers))
                }
                return .respond(
                    HTTPServerResponse(
                        status: .ok, headers: headers + [HTTPHeader(name: "Content-Type", value: "application/json")],
                        body: openAPIDocument))
            case "OPTIONS":
                return .respond(Self.options(allow: "GET, HEAD, OPTIONS", headers: headers))
            default:
                return .respond(Self.methodNotAllowed(request.method, allow: "GET, HEAD, OPTIONS", headers: headers))
            }
        }
        if let download = exportDownload(request, path: path, requestID: requestID, headers: headers) {
            return download
        }
        if request.method == "OPTIONS" { return .respond(Self.options(allow: "POST, OPTIONS", headers: headers)) }
        guard request.method == "POST" else {
            return .respond(Self.methodNotAllowed(request.method, allow: "POST, OPTIONS", headers: headers))
        }
        let name = String(path.dropFirst(Self.apiPrefix.count))
        let isBatch = path == Self.batchPath || name == Self.batchMethod
        guard isBatch || knownMethods.contains(name) else {
            return .respond(
                Self.failure(
                    .notFound(
                        "no method \"\(Self.printable(name))\"; paths are /v1/<package>.<Service>/<Method>, like "
                            + "/v1/rave.identity.v1.Identity/GuestLogin"),
                    headers: headers))
        }
        guard let requestEncoding = Self.encoding(contentType: request.header("content-type")) else {
            return .respond(
                Self.failure(
                    RPCError(
                        .invalidArgument,
                        "Content-Type must be application/json or application/x-protobuf, not "
                            + Self.printable(request.header("content-type") ?? "")),
                    status: .unsupportedMediaType, headers: headers))
        }
        guard request.body.count <= settings.maxRequestBytes else {
            return .respond(
                Self.failure(Self.bodyTooLarge(settings.maxRequestBytes), status: .contentTooLarge, headers: headers))
        }
        let timeout: UInt64
        switch Self.timeout(request.header("x-rave-timeout-ms"), settings: settings) {
        case .success(let nanoseconds): timeout = nanoseconds
        case .failure(let error): return .respond(Self.failure(error, headers: headers))
        }
        var metadata = [MetadataKey.traceID: requestID]
        if let authorization = request.header("authorization") { metadata[MetadataKey.authorization] = authorization }
        if let key = request.header("idempotency-key") { metadata[MetadataKey.idempotencyKey] = key }
        // Why an operator makes an admin write, for the audit log (`rave-reason` on the binary port).
        if let reason = request.header("x-rave-reason") { metadata[MetadataKey.reason] = reason }
        return .call(
            FrontDoorCall(
                method: isBatch ? Self.batchMethod : name, isBatch: isBatch, body: request.body,
                requestEncoding: requestEncoding,
                responseEncoding: Self.encoding(accept: request.header("accept")) ?? requestEncoding,
                metadata: metadata, timeout: timeout, requestID: requestID, headers: headers))
    }

    private func staticFile(_ request: HTTPServerRequest, path: Substring, headers: [HTTPHeader]) -> HTTPServerResponse
    {
        guard request.method == "GET" || request.method == "HEAD" else {
            return Self.methodNotAllowed(request.method, allow: "GET, HEAD", headers: headers)
        }
        guard let file = staticFiles.file(at: path) else {
            return Self.failure(.notFound("no file \(Self.printable(String(path)))"), headers: headers)
        }
        return HTTPServerResponse(
            status: .ok, headers: headers + [HTTPHeader(name: "Content-Type", value: file.contentType)], body: file.body
        )
    }

    static func options(allow: String, headers: [HTTPHeader]) -> HTTPServerResponse {
        HTTPServerResponse(status: .noContent, headers: headers + [HTTPHeader(name: "Allow", value: allow)])
    }

    static func methodNotAllowed(_ method: String, allow: String, headers: [HTTPHeader]) -> HTTPServerResponse {
        var response = failure(
            RPCError(.invalidArgument, "\(method) is not allowed here; use \(allow)"), status: .methodNotAllowed,
            headers: headers)
        response.headers.append(HTTPHeader(name: "Allow", value: allow))
        return response
    }

    // MARK: - Request headers

    /// `X-Request-Id` when it is 1…128 visible ASCII characters.
    static func validRequestID(_ value: String?) -> String? {
        guard let value, (1...128).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else { return nil }
        return value
    }

    /// The encoding a `Content-Type` names: JSON when absent; nil for anything else.
    static func encoding(contentType: String?) -> BodyEncoding? {
        guard let contentType else { return .json }
        switch mediaType(contentType) {
        case "application/json": return .json
        case "application/x-protobuf": return .protobuf
        default: return nil
        }
    }

    /// The encoding an `Accept` asks for: the first of the two types it lists; nil when it lists neither (absent,
    /// `*/*`), which means the request's.
    static func encoding(accept: String?) -> BodyEncoding? {
        guard let accept else { return nil }
        for range in accept.split(separator: ",") {
            switch mediaType(range) {
            case "application/json": return .json
            case "application/x-protobuf": return .protobuf
            default: continue
            }
        }
        return nil
    }

    /// The media type without parameters, lower-cased ("Application/JSON; charset=utf-8" → "application/json").
    private static func mediaType(_ value: some StringProtocol) -> String {
        value.prefix { $0 != ";" }.trimmingASCIISpaces().lowercased()
    }

    /// The call's timeout from `X-Rave-Timeout-Ms`: the default when absent or 0, capped at the maximum.
    static func timeout(_ value: String?, settings: Settings) -> Result<UInt64, RPCError> {
        let maximum = settings.maxTimeout.wholeNanoseconds
        guard let value, value != "0" else { return .success(min(settings.defaultTimeout.wholeNanoseconds, maximum)) }
        guard (1...10).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let milliseconds = UInt64(value)
        else {
            return .failure(
                .invalidArgument("X-Rave-Timeout-Ms must be a whole number of milliseconds, not \(printable(value))"))
        }
        return .success(
            milliseconds == 0 ? settings.defaultTimeout.wholeNanoseconds : min(milliseconds * 1_000_000, maximum))
    }

    static func commonHeaders(requestID: String) -> [HTTPHeader] {
        [HTTPHeader(name: "X-Request-Id", value: requestID), HTTPHeader(name: "Cache-Control", value: "no-store")]
    }

    static func bodyTooLarge(_ limit: Int) -> RPCError {
        .resourceExhausted("the request body is larger than the gateway accepts (\(limit) bytes)")
    }

    /// A client's text as a message may quote it: at most 128 characters, visible ASCII and spaces.
    static func printable(_ text: String) -> String {
        let kept = text.unicodeScalars.prefix(128).map {
            $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
        }
        return String(kept) + (text.unicodeScalars.count > 128 ? "…" : "")
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingASCIISpaces() -> Substring {
        let text = Substring(self)
        let start = text.firstIndex { $0 != " " && $0 != "\t" } ?? text.endIndex
        let end = text.lastIndex { $0 != " " && $0 != "\t" }.map { text.index(after: $0) } ?? start
        return text[start..<Swift.max(start, end)]
    }
}
