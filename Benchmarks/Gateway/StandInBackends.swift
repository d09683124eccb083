import RaveAuth
import RaveMessages
import RaveRPC
import RaveServices

/// identity's internal methods as the gateway needs them, for the benchmark: one signing key, every user
/// resolving to itself (no merges), and no session ever revoked.
struct StandInIdentity: RPCService {
    static let serviceName = "rave.identity.v1.IdentityInternal"
    let keyID: String
    let publicKey: [UInt8]

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/SigningKeys") { _, context in
                var key = IdentityV1.SigningKey()
                key.kid = keyID
                key.algorithm = "EdDSA"
                key.publicKey = publicKey
                var response = IdentityV1.SigningKeysResponse()
                response.keys = [key]
                return response.protobufBytes()
            },
            RPCMethod(name: "\(Self.serviceName)/ResolveUsers") { request, context in
                var response = IdentityV1.ResolveUsersResponse()
                response.users = try IdentityV1.ResolveUsersRequest(protobufBytes: request).userIds.map { id in
                    var user = IdentityV1.ResolvedUser()
                    user.requestedId = id
                    user.canonicalId = id
                    return user
                }
                return response.protobufBytes()
            },
            RPCMethod(name: "\(Self.serviceName)/ListRevocations") { request, context in
                let cursor = try IdentityV1.ListRevocationsRequest(protobufBytes: request).afterCursor
                return IdentityV1.ListRevocationsResponse(revocations: [], cursor: cursor, more: false).protobufBytes()
            },
        ]
    }
}

/// `rave.echo.v1.Echo/Echo`: the cheapest possible service call, so a benchmark through the gateway shows the
/// gateway's own cost.
struct BenchmarkEcho: EchoV1.EchoHandler {
    func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        EchoV1.EchoResponse(payload: request.payload)
    }

    func echoAfterDelay(
        _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
    ) async throws -> EchoV1.EchoResponse {
        try await Task.sleep(for: .milliseconds(Int(request.delayMs)))
        return EchoV1.EchoResponse(payload: request.payload)
    }

    func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        throw RPCError(request.code, request.message)
    }
}
