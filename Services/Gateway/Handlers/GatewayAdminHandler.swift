import Foundation
import RaveMessages
import RaveRPC
import RaveTransport

/// Serves `rave.gateway.v1.GatewayAdmin`: admin methods the gateway answers itself instead of forwarding.
///
/// `CallPipeline.dispatch` admits the call first, as any admin call (docs/gateway.md, "System status").
struct GatewayAdminHandler: GatewayV1.GatewayAdminHandler {
    /// The area of the gateway's own methods: `rave.gateway.v1`.
    static let area = "gateway"

    let pools: [String: BackendPool]
    let traffic: ServiceTraffic

    func getSystemStatus(
        _ request: GatewayV1.GetSystemStatusRequest, context: RequestContext
    ) async throws -> GatewayV1.GetSystemStatusResponse {
        status(now: monotonicNanoseconds(), at: Date())
    }

    /// Every routed service's health and traffic at monotonic time `now` (wall time `at`).
    func status(now: UInt64, at: Date) -> GatewayV1.GetSystemStatusResponse {
        let window = traffic.windowSeconds(now: now)
        let services = pools.keys.sorted().map { name in
            let backends = pools[name]?.backends ?? []
            let figures = traffic.figures(service: name, now: now) ?? .init(calls: 0, errors: 0, p99Milliseconds: 0)
            return GatewayV1.ServiceStatus(
                service: name, backends: UInt32(backends.count),
                healthyBackends: UInt32(backends.filter(\.isKnownHealthy).count), calls: figures.calls,
                errors: figures.errors, callsPerSecond: Double(figures.calls) / Double(window),
                errorRate: figures.calls == 0 ? 0 : Double(figures.errors) / Double(figures.calls),
                p99Ms: figures.p99Milliseconds)
        }
        return GatewayV1.GetSystemStatusResponse(
            services: services, windowSeconds: UInt32(window),
            atUnixMs: Int64((at.timeIntervalSince1970 * 1000).rounded()))
    }

    /// Answers one call of `method` with `request` (its encoded message).
    func serve(method: String, request: [UInt8]) throws(RPCError) -> [UInt8] {
        switch method {
        case "rave.gateway.v1.GatewayAdmin/GetSystemStatus":
            guard (try? GatewayV1.GetSystemStatusRequest(protobufBytes: request)) != nil else {
                throw .invalidArgument("the request is not a GetSystemStatusRequest")
            }
            return status(now: monotonicNanoseconds(), at: Date()).protobufBytes()
        default:
            throw .unimplemented("the gateway does not serve \(method)")
        }
    }
}
