import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Wallet

#if canImport(Glibc)
import Glibc
#endif

/// What the tests that reach the wallet over the network share: databases by URL, certificates, callers.
enum WalletNetworkHarness {
    /// Creates an empty database, passes its URL to `body`, and drops it afterwards.
    static func withDatabase(prefix: String, _ body: (String) async throws -> Void) async throws {
        try await ScratchDatabase.with(prefix: prefix, body)
    }

    /// A fresh directory with a development CA and a certificate per name ("identity" is added for the stand-in
    /// identity the wallet asks about users).
    static func certificates(services: [String]) throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rave-wallet-certs-\(RaveID.random().hex.prefix(12))").path
        try DevelopmentCertificates.write(to: directory, services: Array(Set(services + ["identity"])))
        return directory
    }

    static func clientTLS(_ certificates: String, name: String) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/\(name).pem",
                privateKeyPath: "\(certificates)/\(name)-key.pem"))
    }

    /// The metadata the gateway sets for an authenticated player of `WalletFixture.appID`.
    static func asPlayer(_ user: RaveID) -> CallOptions {
        CallOptions(
            timeout: .seconds(20),
            metadata: [
                MetadataKey.callerUserID: user.hex, MetadataKey.callerAppID: WalletFixture.appID,
                MetadataKey.callerScopes: "player \(PreparedBet.authenticatedScope)",
            ])
    }

    static let asAdmin = CallOptions(
        timeout: .seconds(20),
        metadata: [MetadataKey.callerUserID: "operator", MetadataKey.callerScopes: Caller.adminScope])

    /// USD, the "dice" odds game, and real money for the fixture's app in GB, as `WalletFixture` sets them up
    /// in-process.
    static func setUpCatalog(_ admin: WalletV1.WalletAdminClient) async throws {
        _ = try await admin.createCurrency(.init(code: "USD", decimals: 2), options: asAdmin)
        let dice = WalletV1.OddsDefinition(
            sides: 6, winningNumbers: 3, multiplierNumerator: 19, multiplierDenominator: 10)
        _ = try await admin.createGame(
            .init(game: WalletV1.Game(gameId: "dice", name: "Dice", math: .odds(dice))), options: asAdmin)
        _ = try await admin.setEligibility(
            .init(appId: WalletFixture.appID, realMoneyCountries: ["GB"]), options: asAdmin)
    }

    /// Deposits `amount` USD to `user`, made known to `identity` first.
    static func deposit(
        _ amount: String, to user: RaveID, admin: WalletV1.WalletAdminClient, identity: StandInIdentity
    ) async throws {
        identity.add(user)
        let transfer = WalletV1.OperatorTransfer(
            operationId: RaveID.random().hex, userId: user.hex, currency: "USD", economy: .real, amount: amount)
        _ = try await admin.deposit(.init(transfer: transfer), options: asAdmin)
    }

    /// The status a call failed with, or nil when it succeeded.
    static func status(_ body: () async throws -> Void) async -> StatusCode? {
        do {
            try await body()
            return nil
        } catch {
            return RPCError(mapping: error, requestID: "test").code
        }
    }
}

/// The real `wallet` executable, built next to the test bundle, run as a child process.
final class WalletProcess {
    let process: ChildProcess
    let port: Int
    let logURL: URL

    /// Starts `wallet` on a free port with `environment` added to the test's own.
    init(environment: [String: String]) throws {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        port = try LoopbackPort.unused()
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("rave-wallet-\(UUID().uuidString).log")
        process = try ChildProcess.start(
            directory.appendingPathComponent("wallet").path,
            environment: ChildProcess.environment(
                adding: environment.merging([
                    "RAVE_LISTEN": "127.0.0.1:\(port)",
                    "RAVE_ADMIN_LISTEN": "127.0.0.1:\(try LoopbackPort.unused())",
                ]) { $1 }),
            errors: .file(logURL.path))
    }

    /// What the process wrote to standard error so far.
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// SIGTERM, then waits for the exit.
    func stop() {
        process.signal(SIGTERM)
        process.wait()
        try? FileManager.default.removeItem(at: logURL)
    }
}
