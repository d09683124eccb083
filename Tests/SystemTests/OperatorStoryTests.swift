import Foundation
import RaveMessages
import RaveTestSupport
import Testing

/// The operator's story, told with the real `ravectl admin` executable.
///
/// It sets up a game through the gateway with the admin certificate, and players then see what it defined. It is
/// the test of `ravectl admin`'s commands, their JSON in and out, and their exit statuses.
@Suite("Operator story: ravectl admin against the real stack")
struct OperatorStoryTests {
    @Test("an operator sets up a game with ravectl admin, players see it, and bad commands fail clearly")
    func operatorSetsUpAGame() async throws {
        try #require(StackProcess.isBuilt("ravectl"), "ravectl is built with the tests")
        try await SystemStack.with { stack in
            let ravectl = try Ravectl(stack: stack)
            defer { ravectl.removeFiles() }

            let publisher = try await ravectl.admin("publisher", "create", #"{"name": "Operator Studio"}"#)
            let publisherID = try #require(publisher.string("publisher", "publisherId"))
            let application = try await ravectl.admin(
                "application", "create", #"{"publisherId": "\#(publisherID)", "name": "Operator Game"}"#)
            let appID = try #require(application.string("application", "appId"))
            let fetched = try await ravectl.admin("application", "get", #"{"appId": "\#(appID)"}"#)
            #expect(fetched.string("application", "name") == "Operator Game")

            _ = try await ravectl.admin(
                "leaderboard", "define",
                #"{"appId": "\#(appID)", "definition": {"key": "ops", "name": "Ops Board", "sorter": 1, "active": true}}"#
            )
            _ = try await ravectl.admin(
                "gift-type", "create",
                #"{"appId": "\#(appID)", "giftType": {"key": "ops-life", "name": "Life", "requestable": true}}"#)
            let giftTypes = try await ravectl.admin("gift-type", "list", #"{"appId": "\#(appID)"}"#)
            #expect(giftTypes.array("giftTypes").compactMap { $0.string("key") } == ["ops-life"])

            _ = try await ravectl.admin("currency", "create", #"{"code": "OPS", "decimals": 2}"#)
            // One winning number of six paying 5.7 times the wager: the wallet computes a return of exactly 0.95 (shown to six places).
            let game = try await ravectl.admin(
                "game", "create",
                #"{"game": {"gameId": "ops-dice", "name": "Ops Dice", "odds": {"sides": 6, "winningNumbers": 1, "multiplierNumerator": 57, "multiplierDenominator": 10}}}"#
            )
            #expect(game.string("game", "returnToPlayer") == "0.950000")

            // A player of the new app sees the board the operator defined.
            let player = try await stack.guest(appID: appID)
            let board = try await player.leaderboards.getLeaderboard(.init(leaderboardKey: "ops"))
            #expect(board.leaderboard?.definition?.name == "Ops Board")

            // Deposits are idempotent by operation id: the replay returns the first transfer and moves nothing.
            let deposit = #"""
                {"transfer": {"operationId": "welcome-\#(player.userID)", "userId": "\#(player.userID)",
                 "currency": "OPS", "economy": "ECONOMY_SANDBOX", "amount": "12.50", "reason": "welcome"}}
                """#
            let first = try await ravectl.admin("wallet", "deposit", deposit)
            let replay = try await ravectl.admin("wallet", "deposit", deposit)
            #expect(first.string("transferId") != nil)
            #expect(replay.string("transferId") == first.string("transferId"))
            let wallet = try await ravectl.admin("wallet", "get", #"{"userId": "\#(player.userID)"}"#)
            let balances = wallet.array("balances").filter { $0.string("currency") == "OPS" }
            #expect(balances.map { $0.string("amount") } == ["12.50"])

            // Bad input: a clear status on standard error and a non-zero exit, never a partial effect.
            let tooPrecise = try await ravectl.run(
                ["admin", "wallet", "deposit", "--json", deposit.replacingOccurrences(of: "12.50", with: "1.234")]
                    + ravectl.adminCredential)
            #expect(tooPrecise.status == 1)
            #expect(tooPrecise.standardError.contains("invalidArgument"))
            let withoutCertificate = try await ravectl.run(
                ["admin", "currency", "create", "--json", #"{"code": "NOPE", "decimals": 2}"#])
            #expect(withoutCertificate.status == 1)
            #expect(withoutCertificate.standardError.contains("permissionDenied"))
            let unknown = try await ravectl.run(["admin", "castle", "build"])
            #expect(unknown.status == 2)
            #expect(unknown.standardError.contains("unknown admin command \"castle build\""))
            let help = try await ravectl.run(["admin", "wallet", "deposit", "--help"])
            #expect(help.status == 0)
            #expect(help.standardOutput.contains("rave.wallet.v1.OperatorTransfer"))

            let after = try await ravectl.admin("wallet", "get", #"{"userId": "\#(player.userID)"}"#)
            #expect(
                after.array("balances").filter { $0.string("currency") == "OPS" }.map { $0.string("amount") } == [
                    "12.50"
                ])
        }
    }
}

/// Runs the built `ravectl` against a stack's gateway, with a configuration directory of its own (so no stored
/// login of the machine's user rides along) and a working directory without `.run/certs` (so the admin
/// certificate is only ever the one a command names).
struct Ravectl {
    let executable: URL
    let directory: URL
    let target: [String]
    let adminCredential: [String]

    init(stack: SystemStack) throws {
        executable = StackProcess.buildDirectory.appendingPathComponent("ravectl")
        directory = stack.directory.appendingPathComponent("ravectl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        target = ["--target", "127.0.0.1:\(stack.gatewayPort)", "--ca", "\(stack.certificates)/ca.pem"]
        adminCredential = ["--cert", "\(stack.certificates)/admin.pem", "--key", "\(stack.certificates)/admin-key.pem"]
    }

    /// `ravectl admin NOUN VERB --json JSON` with the admin certificate; fails the test unless it exits 0.
    func admin(_ noun: String, _ verb: String, _ json: String) async throws -> JSONValue {
        let result = try await run(["admin", noun, verb, "--json", json] + adminCredential)
        guard result.status == 0 else {
            throw StackError("ravectl admin \(noun) \(verb) exited \(result.status): \(result.standardError)")
        }
        return try JSONValue(parsing: result.standardOutput)
    }

    /// Runs ravectl with `arguments` (plus the gateway target) and collects its exit status and output.
    func run(_ arguments: [String]) async throws -> (status: Int32, standardOutput: String, standardError: String) {
        let output = directory.appendingPathComponent("stdout-\(UUID().uuidString)")
        let errors = directory.appendingPathComponent("stderr-\(UUID().uuidString)")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RAVE_") }
        environment["XDG_CONFIG_HOME"] = directory.path
        environment["HOME"] = directory.path
        let process = try ChildProcess.start(
            executable.path, arguments + (arguments.contains("--help") ? [] : target), environment: environment,
            directory: directory.path, output: .file(output.path), errors: .file(errors.path))
        let status: Int32
        do {
            status = try await process.wait(within: .seconds(120)).status
        } catch {
            process.kill()
            throw error
        }
        return (
            status, try String(contentsOf: output, encoding: .utf8), try String(contentsOf: errors, encoding: .utf8)
        )
    }

    func removeFiles() { try? FileManager.default.removeItem(at: directory) }
}

/// Just enough of a JSON reader for assertions on ravectl's output.
struct JSONValue {
    let value: Any?

    init(_ value: Any?) { self.value = value }

    init(parsing text: String) throws {
        value = try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    /// The string at `path` (object keys), or nil when any step is missing.
    func string(_ path: String...) -> String? {
        var current = value
        for key in path { current = (current as? [String: Any])?[key] }
        return current as? String
    }

    /// The array under `key`, each element wrapped; empty when absent (protobuf JSON omits empty lists).
    func array(_ key: String) -> [JSONValue] {
        ((value as? [String: Any])?[key] as? [Any] ?? []).map(JSONValue.init)
    }
}
