/// The HTTP status of each protocol status code on the gateway's HTTP/JSON front door (docs/gateway.md,
/// "Responses"); `rave-protogen` documents each operation's error responses with it.
public enum HTTPStatusMapping {
    /// The HTTP status by status code (gRPC's numbering, `rave.rpc.v1.StatusCode`): OK 200, CANCELLED 499, …,
    /// UNAUTHENTICATED 401.
    public static let byCode: [Int] = [
        200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401,
    ]

    /// The HTTP status of `code`; 500 for a code outside the protocol's numbering.
    public static func httpStatus(ofCode code: Int) -> Int {
        byCode.indices.contains(code) ? byCode[code] : 500
    }
}
