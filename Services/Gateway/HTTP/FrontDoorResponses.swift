import Foundation
import RaveDynamic
import RaveGatewayRules
import RaveHTTP
import RaveJSON
import RaveMessages
import RaveRPC
import RaveRuntime

/// How a call's outcome and the front door's own refusals become HTTP responses (docs/gateway.md, "Responses").
extension HTTPFrontDoor {
    /// 200 with the response message in `encoding`.
    static func success(_ body: [UInt8], encoding: BodyEncoding, headers: [HTTPHeader]) -> HTTPServerResponse {
        HTTPServerResponse(
            status: .ok, headers: headers + [HTTPHeader(name: "Content-Type", value: encoding.contentType)], body: body)
    }

    /// The status of `error.code` (or `status` for refusals of HTTP itself), the JSON error body, and the
    /// not-processed and retry headers.
    static func failure(_ error: RPCError, status: HTTPStatus? = nil, headers: [HTTPHeader]) -> HTTPServerResponse {
        var headers = headers + [HTTPHeader(name: "Content-Type", value: BodyEncoding.json.contentType)]
        if error.notProcessed { headers.append(HTTPHeader(name: "X-Rave-Not-Processed", value: "true")) }
        if let seconds = retryAfterSeconds(error) {
            headers.append(HTTPHeader(name: "Retry-After", value: String(seconds)))
        }
        return HTTPServerResponse(
            status: status ?? httpStatus(error.code), headers: headers, body: Array(errorBody(error).utf8))
    }

    /// `{"code": 16, "status": "UNAUTHENTICATED", "message": "…", "details": "<base64>", "notProcessed": false}`.
    static func errorBody(_ error: RPCError) -> String {
        "{\"code\": \(error.code.rawValue), \"status\": \(JSONString.quoted(RPCMetrics.statusName(error.code))), "
            + "\"message\": \(JSONString.quoted(error.message)), "
            + "\"details\": \"\(Data(error.details).base64EncodedString())\", "
            + "\"notProcessed\": \(error.notProcessed)}"
    }

    /// The HTTP status of a protocol status code (docs/gateway.md, the table under "Responses"): the rule the
    /// OpenAPI document is generated from too (`HTTPStatusMapping`).
    static func httpStatus(_ code: StatusCode) -> HTTPStatus {
        HTTPStatus(code: HTTPStatusMapping.httpStatus(ofCode: Int(code.rawValue)))
    }

    /// Whole seconds to wait before retrying: a rate limit's `RetryInfo` rounded up, 1 for a not-processed
    /// UNAVAILABLE; nil otherwise.
    static func retryAfterSeconds(_ error: RPCError) -> UInt32? {
        switch error.code {
        case .resourceExhausted:
            guard !error.details.isEmpty, let info = try? GatewayV1.RetryInfo(protobufBytes: error.details),
                info.retryAfterMs > 0
            else { return nil }
            return (info.retryAfterMs + 999) / 1000
        case .unavailable where error.notProcessed:
            return 1
        default:
            return nil
        }
    }

    /// The answer to a request HTTP itself could not carry (malformed, too large, stalled, refused): the same error
    /// body, and an HTTP/1.1 connection closes after it.
    static func parseFailure(_ error: HTTPParseError, requestID: String) -> HTTPServerResponse {
        let code: StatusCode =
            switch error.status.code {
            case 408: .deadlineExceeded
            case 413, 431: .resourceExhausted
            case 503: .unavailable
            case 505: .unimplemented
            default: .invalidArgument
            }
        // A 503 of HTTP itself is an HTTP/2 stream refused before anything was done with it.
        var response = failure(
            RPCError(code, error.reason, notProcessed: code == .unavailable), status: error.status,
            headers: commonHeaders(requestID: requestID))
        response.closesConnection = true
        return response
    }
}
