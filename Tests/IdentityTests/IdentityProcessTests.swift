import Foundation
import RavePostgres
import RaveTestSupport
import RaveTransport
import Testing

/// The real `identity` executable at start-up: migrations on demand, and clear failures for a bad database.
@Suite("Identity process start-up", .timeLimit(.minutes(2)))
struct IdentityProcessTests {
    @Test func migrateModeAppliesMigrationsAndRavectlMigrateRunsIt() async throws {
        try await IdentityHarness.withDatabase { url in
            let direct = try runProcess("identity", ["migrate"], environment: ["RAVE_DATABASE_URL": url])
            #expect(direct.status == 0, "identity migrate failed:\n\(direct.log)")
            let connection = try await PostgresConnection.connect(to: url, on: IdentityHarness.group.next())
            defer { connection.close() }
            let applied = try await connection.query(PostgresQuery("SELECT count(*) AS applied FROM schema_migrations"))
            #expect(try applied[0].decode(Int64.self, column: "applied") >= 2)

            let again = try runProcess(
                "ravectl", ["migrate", "--service", "identity"], environment: ["RAVE_DATABASE_URL": url])
            #expect(again.status == 0, "ravectl migrate failed:\n\(again.log)")
        }
    }

    @Test func unreachableDatabaseStopsStartUpWithAClearError() throws {
        let url = "postgresql://postgres@127.0.0.1:\(try LoopbackPort.unused())/rave_identity?connect_timeout=2"
        let result = try runProcess("identity", [], environment: try freePorts(["RAVE_DATABASE_URL": url]))
        #expect(result.status == 1)
        #expect(result.log.contains("start-up failed"), "log:\n\(result.log)")
        #expect(result.log.contains("Connection refused"), "log:\n\(result.log)")
    }

    @Test func rejectedLoginStopsStartUpNamingTheRole() throws {
        let server = try #require(ProcessInfo.processInfo.environment["RAVE_TEST_POSTGRES_URL"])
        let url = server.replacingOccurrences(of: "://postgres@", with: "://no_such_role@")
        let result = try runProcess("identity", [], environment: try freePorts(["RAVE_DATABASE_URL": url]))
        #expect(result.status == 1)
        #expect(result.log.contains("no_such_role"), "log:\n\(result.log)")
    }

    @Test func invalidSettingExitsWithTheConfigurationStatus() throws {
        let result = try runProcess("identity", [], environment: ["RAVE_DB_POOL_SIZE": "0"])
        #expect(result.status == 78)
        #expect(result.log.contains("RAVE_DB_POOL_SIZE"), "log:\n\(result.log)")
    }

    /// Identity seals its secrets with keys from RAVE_SECRET_KEY_FILE and has no default: without the file, or with
    /// one other users can read, it does not start.
    @Test(arguments: [nil, 0o644] as [Int?])
    func missingOrExposedSecretKeyFileExitsWithTheConfigurationStatus(mode: Int?) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-identity-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["identity"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ["RAVE_CERT_DIR": directory]
        if let mode {
            let path = try SecretKeyFile.write(in: directory)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            environment["RAVE_SECRET_KEY_FILE"] = path
        }
        try await IdentityHarness.withDatabase { url in
            environment["RAVE_DATABASE_URL"] = url
            let result = try runProcess("identity", [], environment: try freePorts(environment))
            #expect(result.status == 78, "log:\n\(result.log)")
            #expect(result.log.contains("RAVE_SECRET_KEY_FILE"), "log:\n\(result.log)")
        }
    }

    // MARK: - Helpers

    /// `environment` plus free protocol and admin ports, so a process that got further than expected cannot collide.
    private func freePorts(_ environment: [String: String]) throws -> [String: String] {
        environment.merging(
            [
                "RAVE_LISTEN": "127.0.0.1:\(try LoopbackPort.unused())",
                "RAVE_ADMIN_LISTEN": "127.0.0.1:\(try LoopbackPort.unused())",
            ]
        ) { $1 }
    }

    /// Runs an executable built next to the test bundle and waits for it (at most 60 s).
    private func runProcess(
        _ name: String, _ arguments: [String], environment: [String: String]
    ) throws -> (status: Int32, log: String) {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("rave-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: logURL) }
        let process = try ChildProcess.start(
            directory.appendingPathComponent(name).path, arguments,
            environment: ChildProcess.environment(adding: environment), errors: .file(logURL.path))
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        process.signal(SIGTERM)
        let ended = process.wait()
        return (ended.status, (try? String(contentsOf: logURL, encoding: .utf8)) ?? "")
    }
}
