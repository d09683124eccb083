import RaveGatewayRules

/// The parts of the front door's document that do not come from Proto/: the error body, the error responses,
/// headers and credentials, as docs/gateway.md ("HTTP/JSON front door") defines them.
extension OpenAPIGenerator {
    static let overview = """
        Every method a game client may call, served over HTTPS beside the gateway's binary protocol: \
        `POST /v1/<package>.<Service>/<Method>` with the request message as the body, and `POST /v1/batch` for \
        up to 50 calls in one request. Each call goes through the same checks as on the binary port (route, \
        token, scopes, rate limits, deadline).

        Bodies are protobuf's canonical JSON mapping (`application/json`, the default): lowerCamelCase field \
        names (the .proto names are accepted too), enums by name, 64-bit integers as strings, bytes as base64, \
        unset fields left out (so no field is ever required, and `{}` is a message with every field unset). A \
        field the message does not have is refused (400). With `Content-Type` or `Accept` \
        `application/x-protobuf` the request or response is the encoded message instead.

        A failed call has the HTTP status of its status code and the `Error` body, whatever the `Accept`. \
        Every response carries `X-Request-Id`.

        Generated from Proto/ by `make proto` (rave-protogen); the gateway serves it at `/v1/openapi.json`.
        """

    /// The front door's form of the batch: each call's request and each result's response is the JSON of its
    /// method's message, not base64 (docs/gateway.md, "Batch over HTTP").
    static let batchOverrides: [String: JSONValue] = [
        "rave.gateway.v1.BatchCall.request": [
            "type": "object",
            "description": """
            The request message of `method` in the JSON mapping: an object, not base64 (over the HTTP front \
            door; with `application/x-protobuf` the batch is the binary one, with the encoded message). \
            Unset: the empty message.
            """,
        ],
        "rave.gateway.v1.BatchResult.response": [
            "type": "object",
            "description": """
            The response message of the call's method in the JSON mapping, an object, when `code` is OK (with \
            `application/x-protobuf`, the encoded message).
            """,
        ],
    ]

    /// The body of every failed call on the front door.
    static let errorSchema: JSONValue = [
        "type": "object",
        "description": "A failed call: its status code (by number and name), message and details.",
        "properties": [
            "code": ["type": "integer", "minimum": 1, "maximum": 16, "description": "The status code's number."],
            "status": .object([
                ("$ref", "#/components/schemas/rave.rpc.v1.StatusCode"),
                ("description", "The status code's name."),
            ]),
            "message": ["type": "string", "description": "What went wrong, in words."],
            "details": [
                "type": "string", "contentEncoding": "base64",
                "description": "The status details the method documents, encoded (empty when none).",
            ],
            "notProcessed": [
                "type": "boolean",
                "description": "The call had no effect: safe to retry (also the header `X-Rave-Not-Processed: true`).",
            ],
        ],
        "required": ["code", "status", "message", "details", "notProcessed"],
        "additionalProperties": false,
    ]

    /// One response per HTTP status a status code maps to, named by that status, plus `default`.
    static func errorResponses(_ statusCodes: [(name: String, number: Int)]) -> [(key: String, value: JSONValue)] {
        var namesByStatus: [Int: [String]] = [:]
        for code in statusCodes where code.number != 0 {
            namesByStatus[HTTPStatusMapping.httpStatus(ofCode: code.number), default: []].append(code.name)
        }
        var responses: [(key: String, value: JSONValue)] = []
        for status in namesByStatus.keys.sorted() {
            let names = (namesByStatus[status] ?? []).joined(separator: ", ")
            var headers: [(key: String, value: JSONValue)] = [
                ("X-Request-Id", ["$ref": "#/components/headers/X-Request-Id"]),
                ("X-Rave-Not-Processed", ["$ref": "#/components/headers/X-Rave-Not-Processed"]),
            ]
            if status == 429 || status == 503 {
                headers.append(("Retry-After", ["$ref": "#/components/headers/Retry-After"]))
            }
            responses.append((String(status), errorResponse("Status \(names).", headers: headers)))
        }
        responses.append(
            (
                "default",
                errorResponse(
                    "Any other failure, and errors of HTTP itself: 405 (another HTTP method), 408 (a request that stopped arriving), 413 (a body over the limit), 415 (another media type), 431 (a head too large).",
                    headers: [("X-Request-Id", ["$ref": "#/components/headers/X-Request-Id"])])
            ))
        return responses
    }

    private static func errorResponse(_ description: String, headers: [(key: String, value: JSONValue)]) -> JSONValue {
        [
            "description": .string(description),
            "headers": .object(headers),
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ]
    }

    static let parameters: JSONValue = [
        "Idempotency-Key": [
            "name": "Idempotency-Key", "in": "header", "required": false,
            "description":
                "Makes a write safe to retry: a replay returns the first result (the call's `idempotency-key`).",
            "schema": ["type": "string"],
        ],
        "X-Request-Id": [
            "name": "X-Request-Id", "in": "header", "required": false,
            "description":
                "The call's trace id, 1…128 visible ASCII characters; made up by the gateway when absent or invalid.",
            "schema": ["type": "string", "pattern": "^[!-~]{1,128}$"],
        ],
        "X-Rave-Timeout-Ms": [
            "name": "X-Rave-Timeout-Ms", "in": "header", "required": false,
            "description": "The call's deadline in milliseconds; absent or 0: the server's default.",
            "schema": ["type": "integer", "minimum": 0, "maximum": .integer(Int(UInt32.max))],
        ],
    ]

    static let headers: JSONValue = [
        "X-Request-Id": [
            "description": "The request's id (the client's `X-Request-Id`, or one the gateway made up).",
            "schema": ["type": "string"],
        ],
        "X-Rave-Not-Processed": [
            "description": "`true` when the call had no effect: safe to retry.",
            "schema": ["type": "string", "enum": ["true"]],
        ],
        "Retry-After": [
            "description": "Seconds to wait before retrying (a rate limit, or a not-processed UNAVAILABLE).",
            "schema": ["type": "integer", "minimum": 0],
        ],
    ]

    static let securitySchemes: JSONValue = [
        "bearerAuth": [
            "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": "An access token from a login method (`Identity/GuestLogin`, `LoginWithPassword`, …).",
        ],
        "operatorAuth": [
            "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": .string(
                "An operator's access token (`Identity/OperatorLogin`): admin methods only, as far as the operator's "
                    + "role reaches; writes also need the `X-Rave-Reason` header."),
        ],
        "mutualTLS": [
            "type": "mutualTLS",
            "description":
                "The admin client certificate: issued by the deployment's CA with the SAN URI `rave://admin`.",
        ],
    ]
}
