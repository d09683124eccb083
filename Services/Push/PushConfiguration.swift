import Foundation
import RaveHTTPClient
import RaveMessages
import RavePostgres
import RaveRuntime
import RaveTelemetry

/// The push service's own settings, from `RAVE_PUSH_*` environment variables (docs/push.md lists them).
///
/// A provider whose credentials are not set is left out: its deliveries fail with "no provider is configured",
/// so a local stack runs without Apple or Google accounts.
struct PushConfiguration: Sendable {
    var apns: APNsProvider.Configuration?
    var fcm: FCMProvider.Configuration?
    /// A PEM bundle to trust instead of the system store (tests and local sinks).
    var caFile: String?
    /// The identity service, for the publisher of the applications operators name (docs/push.md, "Operator scope").
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    var worker = DeliveryWorker.Configuration()
    var effectiveSettings: [(String, String)] = []

    init(environment: [String: String]) throws {
        var reader = ConfigurationReader(environment: environment)
        worker.concurrency = try reader.integer("RAVE_PUSH_CONCURRENCY", default: 100, range: 1...1000)
        worker.batchSize = try reader.integer("RAVE_PUSH_BATCH_SIZE", default: 1000, range: 1...10_000)
        worker.pollInterval = try reader.duration(
            "RAVE_PUSH_POLL_INTERVAL", default: .milliseconds(250), range: .milliseconds(10)...(.seconds(60)))
        identityAddress = try reader.address("RAVE_PUSH_IDENTITY_ADDRESS", default: identityAddress)
        caFile = environment["RAVE_PUSH_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        reader.record("RAVE_PUSH_CA_FILE", caFile ?? "(system trust store)")
        if let keyFile = environment["RAVE_PUSH_APNS_KEY_FILE"], !keyFile.isEmpty {
            apns = APNsProvider.Configuration(
                productionURL: try reader.string("RAVE_PUSH_APNS_URL", default: "https://api.push.apple.com"),
                sandboxURL: try reader.string(
                    "RAVE_PUSH_APNS_SANDBOX_URL", default: "https://api.sandbox.push.apple.com"),
                keyID: try reader.string("RAVE_PUSH_APNS_KEY_ID", default: ""),
                teamID: try reader.string("RAVE_PUSH_APNS_TEAM_ID", default: ""),
                topic: try reader.string("RAVE_PUSH_APNS_TOPIC", default: ""),
                privateKeyPEM: try Self.read(keyFile, variable: "RAVE_PUSH_APNS_KEY_FILE"))
            reader.record("RAVE_PUSH_APNS_KEY_FILE", keyFile)
        } else {
            reader.record("RAVE_PUSH_APNS_KEY_FILE", "(unset: APNs disabled)")
        }
        if let accountFile = environment["RAVE_PUSH_FCM_SERVICE_ACCOUNT_FILE"], !accountFile.isEmpty {
            let account = try Self.serviceAccount(accountFile)
            fcm = FCMProvider.Configuration(
                baseURL: try reader.string("RAVE_PUSH_FCM_URL", default: "https://fcm.googleapis.com"),
                projectID: account.projectID, clientEmail: account.clientEmail, privateKeyPEM: account.privateKey,
                tokenURL: try reader.string("RAVE_PUSH_FCM_TOKEN_URL", default: account.tokenURL))
            reader.record("RAVE_PUSH_FCM_SERVICE_ACCOUNT_FILE", accountFile)
        } else {
            reader.record("RAVE_PUSH_FCM_SERVICE_ACCOUNT_FILE", "(unset: FCM disabled)")
        }
        effectiveSettings = reader.effectiveSettings
    }

    /// The delivery worker with a provider for each configured platform, sharing one HTTP/2 client.
    func makeWorker(pool: PostgresPool, clock: any PushClock, logger: Logger) throws -> DeliveryWorker {
        let client: HTTP2Client
        do {
            client = try HTTP2Client(caFile: caFile, maximumStreams: worker.concurrency)
        } catch {
            throw PushError(.configuration, "cannot start the HTTP/2 client: \(error.message)")
        }
        var providers: [PushV1.Platform: any PushProvider] = [:]
        if let apns { providers[.apns] = try APNsProvider(configuration: apns, client: client, clock: clock) }
        if let fcm { providers[.fcm] = try FCMProvider(configuration: fcm, client: client, clock: clock) }
        return DeliveryWorker(pool: pool, providers: providers, clock: clock, configuration: worker, logger: logger)
    }

    private static func read(_ path: String, variable: String) throws(PushError) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PushError(.configuration, "\(variable): cannot read \(path)")
        }
        return text
    }

    /// The fields of a Google service-account JSON key file that FCM needs.
    private static func serviceAccount(
        _ path: String
    ) throws(PushError) -> (
        projectID: String, clientEmail: String, privateKey: String, tokenURL: String
    ) {
        let text = try read(path, variable: "RAVE_PUSH_FCM_SERVICE_ACCOUNT_FILE")
        guard let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let projectID = json["project_id"] as? String, let clientEmail = json["client_email"] as? String,
            let privateKey = json["private_key"] as? String
        else {
            throw PushError(
                .configuration, "\(path) is not a service-account key (needs project_id, client_email, private_key)")
        }
        return (
            projectID, clientEmail, privateKey, json["token_uri"] as? String ?? "https://oauth2.googleapis.com/token"
        )
    }
}
