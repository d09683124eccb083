import Foundation
import RaveMessages
import RaveRPC
import RaveTransport

/// One simulated player signed in through the gateway: the token a client sends there, and the caller metadata
/// the gateway puts on the calls it forwards, so the same player can also call the service directly.
struct LoadtestGuest: Sendable {
    var accessToken: String
    var userID: String
    var sessionID: String
    var scopes: String

    /// What a client sends to the gateway.
    var gatewayMetadata: [String: String] { ["authorization": "Bearer \(accessToken)"] }

    /// What the gateway forwards to the service for this player.
    func directMetadata(app: String) -> [String: String] {
        [
            MetadataKey.callerUserID: userID, MetadataKey.callerAppID: app,
            MetadataKey.callerSessionID: sessionID, MetadataKey.callerScopes: scopes,
        ]
    }

    /// Signs in a new guest (a device id no earlier run used) through the gateway on `connection`.
    static func login(app: String, device: String, on connection: RPCConnection) async throws -> LoadtestGuest {
        let request = IdentityV1.GuestLoginRequest(
            appId: app, device: IdentityV1.DeviceInfo(deviceId: device, name: "loadtest", platform: "ravectl"))
        let bytes = try await connection.call(
            method: "rave.identity.v1.Identity/GuestLogin", request: request.protobufBytes(),
            options: CallOptions(timeout: .seconds(30)))
        let response = try IdentityV1.LoginResponse(protobufBytes: bytes)
        guard case .tokens(let tokens) = response.outcome else {
            throw UsageError("the guest login of \(device) asked for a second factor")
        }
        return LoadtestGuest(
            accessToken: tokens.accessToken, userID: response.user?.profile?.userId ?? "",
            sessionID: tokens.sessionId, scopes: try scopes(of: tokens.accessToken))
    }

    /// The token's `scp` claim, read without verifying the token: the gateway has verified it already.
    private static func scopes(of token: String) throws -> String {
        let parts = token.split(separator: ".")
        var payload = parts.count == 3 ? String(parts[1]) : ""
        payload = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload),
            let claims = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let scopes = claims["scp"] as? String
        else { throw UsageError("the access token from GuestLogin has no readable scp claim") }
        return scopes
    }
}

/// `--gateway`: the same load through the gateway and directly to the service, one after the other in one run,
/// by the same guests (one per connection, signed in through the gateway first), so the two are comparable.
enum LoadtestGatewayComparison {
    static func run(
        settings: LoadtestSettings, gateway: String, gatewayTLS: TLSContext, directTLS: TLSContext,
        group: EventLoopGroup, out: String, svg: String?
    ) async throws -> Int32 {
        let (serviceHost, servicePort) = try parseAddress(settings.target)
        let (gatewayHost, gatewayPort) = try parseAddress(gateway)
        var throughGateway: [RPCConnection] = []
        var direct: [RPCConnection] = []
        defer { for connection in throughGateway + direct { connection.close() } }
        var guests: [LoadtestGuest] = []
        let run = UInt64.random(in: 0...UInt64.max)
        for number in 0..<settings.connections {
            let connection = try await RPCConnection.connect(
                host: gatewayHost, port: gatewayPort, tls: gatewayTLS, group: group)
            throughGateway.append(connection)
            guests.append(
                try await LoadtestGuest.login(
                    app: settings.app, device: "loadtest-\(String(run, radix: 16))-\(number)", on: connection))
            direct.append(
                try await RPCConnection.connect(host: serviceHost, port: servicePort, tls: directTLS, group: group))
        }
        print("\(guests.count) guests signed in through the gateway at \(gateway)")

        let gatewayMeasurements = await LoadtestCommand.measure(
            connections: throughGateway, plan: try settings.plan(startingAt: monotonicNanoseconds() + 100_000_000),
            settings: settings, callers: guests.map(\.gatewayMetadata))
        var gatewaySettings = settings
        gatewaySettings.target = "\(gateway) (gateway)"
        let gatewayReport = LoadtestReport(settings: gatewaySettings, measurements: gatewayMeasurements)
        gatewayReport.print()

        let directMeasurements = await LoadtestCommand.measure(
            connections: direct, plan: try settings.plan(startingAt: monotonicNanoseconds() + 100_000_000),
            settings: settings, callers: guests.map { $0.directMetadata(app: settings.app) })
        var directSettings = settings
        directSettings.target = "\(settings.target) (direct)"
        let directReport = LoadtestReport(settings: directSettings, measurements: directMeasurements)
        directReport.print()

        print("")
        for operation in LoadtestOperation.allCases {
            guard let viaGateway = gatewayMeasurements.histograms[operation]?.total,
                let viaService = directMeasurements.histograms[operation]?.total, viaService > 0
            else { continue }
            let ratio = String(format: "%.2f", Double(viaGateway) / Double(viaService))
            print("  \(operation.rawValue): through the gateway / direct = \(ratio)×")
        }
        let base = out.hasSuffix(".json") ? String(out.dropLast(5)) : out
        gatewayReport.write(json: base + "-gateway.json", svg: svg.map { Self.suffixed($0, "-gateway") })
        directReport.write(json: base + "-direct.json", svg: svg.map { Self.suffixed($0, "-direct") })
        let failed = gatewayMeasurements.errors.values.reduce(0, +) + directMeasurements.errors.values.reduce(0, +)
        return failed == 0 ? 0 : 1
    }

    private static func suffixed(_ path: String, _ suffix: String) -> String {
        path.hasSuffix(".svg") ? String(path.dropLast(4)) + suffix + ".svg" : path + suffix
    }
}
