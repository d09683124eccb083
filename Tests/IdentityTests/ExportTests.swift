import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Identity

/// Account export (docs/identity.md, "Exporting an account"): a player (or an operator for them) asks, identity's
/// worker assembles identity's sections and every participant's pages into one JSON archive, which is downloaded
/// in chunks and deleted after the retention period.
@Suite("Account export")
struct ExportTests {
    typealias Harness = IdentityHarness
    static let password = "correct horse"

    func account(
        _ harness: Harness, app: IdentityV1.Application, email: String = "export@example.com",
        username: String = "exporting_player"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: "export-phone-\(username)"), email: email,
                password: Self.password, birthYear: 1990, country: "DE", username: username),
            context: Harness.anonymous)
    }

    func request(
        _ harness: Harness, _ login: IdentityV1.LoginResponse, appID: String, password: String = password
    ) async throws -> IdentityV1.RequestAccountExportResponse {
        try await harness.player.requestAccountExport(
            .init(currentPassword: password), context: Harness.playerContext(login, appID: appID))
    }

    func worker(
        _ harness: Harness, clock: TestClock, participants: [AccountExportWorker.Participant] = [],
        policy: AccountExportPolicy = AccountExportPolicy()
    ) -> AccountExportWorker {
        AccountExportWorker(
            pool: harness.pool, participants: participants, policy: policy, secrets: harness.dependencies.secretKeys,
            clock: { clock.now }, callTimeout: .seconds(5), logger: Logger(label: "export", level: .critical))
    }

    /// The whole archive, fetched chunk by chunk with `fetch(offset)`.
    func download(
        _ fetch: (Int64) async throws -> IdentityV1.DownloadAccountExportResponse
    ) async throws -> (bytes: [UInt8], chunks: Int, sha256: String) {
        var bytes: [UInt8] = []
        var chunks = 0
        var sha256 = ""
        while true {
            let page = try await fetch(Int64(bytes.count))
            sha256 = page.sha256
            if page.chunk.isEmpty { break }
            #expect(page.chunk.count <= 1 << 20)
            bytes += page.chunk
            chunks += 1
            if Int64(bytes.count) == page.totalSize { break }
        }
        return (bytes, chunks, sha256)
    }

    func export(
        _ harness: Harness, _ login: IdentityV1.LoginResponse, appID: String, id: String = ""
    ) async throws -> IdentityV1.AccountExport? {
        try await harness.player.getAccountExport(
            .init(exportId: id), context: Harness.playerContext(login, appID: appID)
        ).accountExport
    }

    // MARK: - Tests

    /// The worker over real mTLS against a participant answering in three pages: the archive is valid JSON with
    /// identity's sections (no secrets) and every page in order, it is downloaded in more than one chunk and
    /// reassembles to its SHA-256, and a user with a verified email is mailed.
    @Test func theArchiveHoldsIdentitysSectionsAndEveryParticipantPageInOrder() async throws {
        let clock = TestClock()
        let participant = PagedExporter(pages: 3, padding: 400_000)
        let fixture = try ParticipantFixture(participant)
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            _ = try await harness.pool.query(
                PostgresQuery(
                    "UPDATE users SET email = 'export@example.com', email_verified = true WHERE id = $1",
                    [try parseRaveID(login.userID)]))
            let requested = try await request(harness, login, appID: app.appId)
            #expect(requested.created)
            #expect(requested.accountExport?.status == .pending)
            let exportID = try #require(requested.accountExport?.exportId)
            let mails = { () async throws -> Int64 in
                try await harness.pool.query(
                    PostgresQuery(
                        "SELECT count(*) AS n FROM outbox_events WHERE topic = 'identity.mail' AND key = $1",
                        ["mail:\(login.userID)"])
                ).first?.decode(Int64.self, column: "n") ?? 0
            }
            let mailsBefore = try await mails()

            let worked = try await worker(harness, clock: clock, participants: [fixture.participant("social")])
                .runOnce()
            #expect(worked == 1)
            #expect(participant.calls == 3)
            #expect(participant.callersWereIdentity)
            #expect(participant.requests.map(\.cursor) == ["", "1", "2"])
            #expect(participant.requests.allSatisfy { $0.userId == login.userID && $0.exportId == exportID })

            let ready = try #require(try await export(harness, login, appID: app.appId, id: exportID))
            #expect(ready.status == .ready)
            #expect(ready.sha256.count == 64)
            #expect(ready.expiresAtUnixMs - ready.readyAtUnixMs == 7 * 86_400_000)
            let context = Harness.playerContext(login, appID: app.appId)
            let archive = try await download { offset in
                try await harness.player.downloadAccountExport(
                    .init(exportId: exportID, offset: offset), context: context)
            }
            #expect(archive.chunks == 2)
            #expect(Int64(archive.bytes.count) == ready.sizeBytes)
            #expect(AccountExportStore.hex(Digest.sha256(archive.bytes)) == ready.sha256)
            #expect(archive.sha256 == ready.sha256)
            #expect(try await mails() == mailsBefore + 1)

            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(archive.bytes)) as? [String: Any])
            #expect(document["format"] as? String == "rave.export.v1")
            #expect(document["export_id"] as? String == exportID)
            #expect(document["user_id"] as? String == login.userID)
            let services = try #require(document["services"] as? [String: Any])
            #expect(Set(services.keys) == ["identity", "social"])
            let identity = try #require(services["identity"] as? [String: [[String: Any]]])
            #expect(Set(identity.keys) == Set(AccountExportSections.statements.map(\.section)))
            #expect(identity["account"]?.first?["username"] as? String == "exporting_player")
            #expect(identity["account"]?.first?["user_id"] as? String == login.userID)
            let emails = identity["emails"]?.compactMap { $0["email"] as? String } ?? []
            #expect(emails.contains("export@example.com"))
            #expect(identity["sessions"]?.count == 1)
            #expect(identity["exports"]?.first?["export_id"] as? String == exportID)
            let created = try #require(identity["account"]?.first?["created_at"] as? String)
            #expect(created.hasSuffix("Z") && created.count == 24)
            // Nothing secret: no hash, token or TOTP secret is a key anywhere.
            let text = String(decoding: archive.bytes, as: UTF8.self)
            for secret in ["hash", "token", "secret", "scrypt$"] { #expect(!text.contains(secret), "\(secret)") }
            let social = try #require(services["social"] as? [String: [[String: Any]]])
            #expect(social["friends"]?.compactMap { $0["n"] as? Int } == [0, 1, 2, 3, 4, 5])
            #expect(social["blocks"]?.count == 1)
        }
        await fixture.stop()
    }

    /// The ready mail goes to a verified email, in the application's template for the player's language (no
    /// `{{code}}` needed), with the expiry filled in.
    @Test func theReadyMailUsesTheApplicationsTemplateInThePlayersLanguage() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            _ = try await harness.admin.setMailTemplate(
                .init(
                    appId: app.appId, kind: .exportReady, language: "de", subject: "Dein Export für {{app_name}}",
                    body: "Herunterladen bis {{expires_at}} ({{days}} Tage)."),
                context: OperatorTests.certificate("SetMailTemplate"))
            let login = try await account(harness, app: app)
            _ = try await harness.pool.query(
                PostgresQuery(
                    "UPDATE users SET email = 'export@example.com', email_verified = true WHERE id = $1",
                    [try parseRaveID(login.userID)]))
            _ = try await harness.player.requestAccountExport(
                .init(currentPassword: Self.password, language: "de-AT"),
                context: Harness.playerContext(login, appID: app.appId))
            #expect(try await worker(harness, clock: clock).runOnce() == 1)

            let key = "mail:\(login.userID)"
            let row = try #require(
                try await harness.pool.query(
                    PostgresQuery(
                        "SELECT payload FROM outbox_events WHERE topic = 'identity.mail' AND key = $1 ORDER BY id DESC",
                        [key])
                ).first)
            let plain = try harness.dependencies.secretKeys.open(
                try row.decode([UInt8].self, column: "payload"), context: IdentityMail.context(key: key))
            let mail = try JSONDecoder().decode(IdentityMail.Outgoing.self, from: Data(plain))
            #expect(mail.kind == .exportReady)
            #expect(mail.to == "export@example.com")
            #expect(mail.subject == "Dein Export für Game")
            let expires = ExportArchive.timestamp(clock.now + 7 * 86_400)
            #expect(mail.body == "Herunterladen bis \(expires) (7 Tage).")
        }
    }

    /// Asking re-authenticates like DeleteAccount; a second request answers the export in progress; a player gets
    /// one new export per 24 hours.
    @Test func requestingReauthenticatesAndAllowsOneInProgressAndOnePerDay() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            let missing = await statusCode {
                _ = try await harness.player.requestAccountExport(
                    .init(), context: Harness.playerContext(login, appID: app.appId))
            }
            #expect(missing?.code == .invalidArgument)
            #expect(missing?.message == "current_password is required: this account has a password")
            let wrong = await statusCode {
                _ = try await request(harness, login, appID: app.appId, password: "nope!!!!")
            }
            #expect(wrong?.code == .invalidArgument)
            #expect(wrong?.message == "current_password is wrong")
            #expect(try await export(harness, login, appID: app.appId) == nil)

            let first = try await request(harness, login, appID: app.appId)
            let second = try await request(harness, login, appID: app.appId)
            #expect(first.created && !second.created)
            #expect(second.accountExport?.exportId == first.accountExport?.exportId)
            let rows = try await harness.pool.query(PostgresQuery("SELECT count(*) AS n FROM account_exports"))
            #expect(try rows.first?.decode(Int64.self, column: "n") == 1)

            #expect(try await worker(harness, clock: clock).runOnce() == 1)
            let limited = await statusCode { _ = try await request(harness, login, appID: app.appId) }
            #expect(limited?.code == .resourceExhausted)
            #expect(limited?.message.hasPrefix("one data export per 24 hours; the next may be asked for in") == true)
            clock.advance(by: 24 * 3600 + 1)
            let next = try await request(harness, login, appID: app.appId)
            #expect(next.created)
            #expect(next.accountExport?.exportId != first.accountExport?.exportId)
        }
    }

    /// Requests racing each other (an operator's, without re-authentication, so they start together) all answer
    /// the one export in progress; none fails on the database's uniqueness.
    @Test func concurrentRequestsAnswerTheOneExportInProgress() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await harness.admin.requestUserExport(
                            .init(userId: login.userID), context: Harness.adminContext
                        ).accountExport?.exportId ?? ""
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
            let rows = try await harness.pool.query(PostgresQuery("SELECT count(*) AS n FROM account_exports"))
            #expect(try rows.first?.decode(Int64.self, column: "n") == 1)
        }
    }

    /// Another player's export id answers exactly as an unknown one; a pending export cannot be downloaded.
    @Test func anotherPlayersExportIsNotFound() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let owner = try await account(harness, app: app)
            let other = try await account(harness, app: app, email: "other@example.com", username: "other_player")
            let exportID = try #require(try await request(harness, owner, appID: app.appId).accountExport?.exportId)
            let pending = await statusCode {
                _ = try await harness.player.downloadAccountExport(
                    .init(exportId: exportID), context: Harness.playerContext(owner, appID: app.appId))
            }
            #expect(pending?.code == .failedPrecondition)
            #expect(try await worker(harness, clock: clock).runOnce() == 1)

            let otherContext = Harness.playerContext(other, appID: app.appId)
            let unknown = RaveID.random().hex
            for id in [exportID, unknown] {
                let get = await statusCode { _ = try await export(harness, other, appID: app.appId, id: id) }
                #expect(get?.code == .notFound)
                #expect(get?.message == "no export \(id)")
                let download = await statusCode {
                    _ = try await harness.player.downloadAccountExport(.init(exportId: id), context: otherContext)
                }
                #expect(download?.code == .notFound)
            }
            #expect(try await export(harness, other, appID: app.appId) == nil)
            let beyond = await statusCode {
                _ = try await harness.player.downloadAccountExport(
                    .init(exportId: exportID, offset: 1 << 40), context: Harness.playerContext(owner, appID: app.appId))
            }
            #expect(beyond?.code == .invalidArgument)
        }
    }

    /// A participant that fails is retried with backoff, its error visible meanwhile; one that keeps failing for
    /// the failure window fails the export, which then does not count against the player's limit.
    @Test func aFailingParticipantIsRetriedUntilItAnswersAndFailsTheExportAfterTheWindow() async throws {
        let clock = TestClock()
        let participant = PagedExporter(pages: 2, failures: 2)
        let fixture = try ParticipantFixture(participant)
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            let worker = worker(harness, clock: clock, participants: [fixture.participant("social")])
            let exportID = try #require(try await request(harness, login, appID: app.appId).accountExport?.exportId)

            #expect(try await worker.runOnce() == 1)
            let failing = try #require(try await export(harness, login, appID: app.appId, id: exportID))
            #expect(failing.status == .pending)
            #expect(failing.error.hasPrefix("participant social:"))
            #expect(failing.error.contains("still starting"))
            // Not due again before the backoff.
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 5)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 10)
            #expect(try await worker.runOnce() == 1)
            let ready = try #require(try await export(harness, login, appID: app.appId, id: exportID))
            #expect(ready.status == .ready)
            #expect(ready.error.isEmpty)
            #expect(participant.calls == 4)

            // A participant down for good: failed after the window.
            clock.advance(by: 24 * 3600 + 1)
            participant.fail(times: 1_000)
            let doomed = try #require(try await request(harness, login, appID: app.appId).accountExport?.exportId)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 3600)
            #expect(try await worker.runOnce() == 1)
            let failed = try #require(try await export(harness, login, appID: app.appId, id: doomed))
            #expect(failed.status == .failed)
            #expect(failed.failedAtUnixMs > 0)
            #expect(failed.error.hasPrefix("participant social:"))
            #expect(try await request(harness, login, appID: app.appId).created)
        }
        await fixture.stop()
    }

    /// A ready export expires after the retention: the worker deletes its archive and it cannot be downloaded.
    @Test func readyExportsExpireAndTheirArchiveIsDeleted() async throws {
        let clock = TestClock()
        try await Harness.with(configure: { $0.exports.retention = 3 * 86_400 }, clock: clock) { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            let exportID = try #require(try await request(harness, login, appID: app.appId).accountExport?.exportId)
            var policy = AccountExportPolicy()
            policy.retention = 3 * 86_400
            let worker = worker(harness, clock: clock, policy: policy)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 3 * 86_400 - 60)
            try await worker.runOnce()
            #expect(try await export(harness, login, appID: app.appId, id: exportID)?.status == .ready)
            clock.advance(by: 61)
            try await worker.runOnce()
            #expect(try await export(harness, login, appID: app.appId, id: exportID)?.status == .expired)
            let chunks = try await harness.pool.query(PostgresQuery("SELECT count(*) AS n FROM account_export_chunks"))
            #expect(try chunks.first?.decode(Int64.self, column: "n") == 0)
            let gone = await statusCode {
                _ = try await harness.player.downloadAccountExport(
                    .init(exportId: exportID), context: Harness.playerContext(login, appID: app.appId))
            }
            #expect(gone?.code == .failedPrecondition)
        }
    }

    /// Deleting the account erases its exports, archive included.
    @Test func deletingTheAccountErasesItsExports() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            _ = try await request(harness, login, appID: app.appId)
            #expect(try await worker(harness, clock: clock).runOnce() == 1)
            let forced = try await harness.admin.forceAccountDeletion(
                .init(userId: login.userID, reason: "asked by mail"), context: Harness.adminContext)
            #expect(forced.deletion?.status == .completed)
            let left = try await harness.pool.query(
                PostgresQuery(
                    """
                    SELECT (SELECT count(*) FROM account_exports) + (SELECT count(*) FROM account_export_chunks) AS n
                    """))
            #expect(try left.first?.decode(Int64.self, column: "n") == 0)
        }
    }

    /// Operators with the support role export players of their publisher; a viewer is refused (it may only see the
    /// state), and a player of another publisher is NOT_FOUND to them.
    @Test func operatorsOfThePlayersPublisherExportForThem() async throws {
        // Operator sessions are checked against the database's clock: this test's clock starts now.
        let clock = TestClock(Date())
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let elsewhere = try await harness.makeApplication()
            let login = try await account(harness, app: app)
            let support = try await OperatorTests.enrol(
                harness, email: "support@example.com", role: .support, publisherID: app.publisherId,
                now: clock.now)
            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: app.publisherId, now: clock.now)
            let stranger = try await OperatorTests.enrol(
                harness, email: "stranger@example.com", role: .support, publisherID: elsewhere.publisherId,
                now: clock.now)

            let refused = await statusCode {
                _ = try await harness.admin.requestUserExport(
                    .init(userId: login.userID),
                    context: OperatorTests.operatorContext(viewer.tokens, "RequestUserExport"))
            }
            #expect(refused?.code == .permissionDenied)
            for method in ["RequestUserExport", "GetUserExport"] {
                let hidden = await statusCode {
                    let context = OperatorTests.operatorContext(stranger.tokens, method)
                    if method == "RequestUserExport" {
                        _ = try await harness.admin.requestUserExport(.init(userId: login.userID), context: context)
                    } else {
                        _ = try await harness.admin.getUserExport(.init(userId: login.userID), context: context)
                    }
                }
                #expect(hidden?.code == .notFound)
                #expect(hidden?.message == "no user \(login.userID)")
            }

            let requested = try await harness.admin.requestUserExport(
                .init(userId: login.userID), context: OperatorTests.operatorContext(support.tokens, "RequestUserExport")
            )
            #expect(requested.created)
            #expect(requested.accountExport?.requestedBy == .operator)
            let exportID = try #require(requested.accountExport?.exportId)
            #expect(try await worker(harness, clock: clock).runOnce() == 1)
            let seen = try await harness.admin.getUserExport(
                .init(userId: login.userID),
                context: OperatorTests.operatorContext(support.tokens, "GetUserExport"))
            #expect(seen.accountExport?.exportId == exportID)
            #expect(seen.accountExport?.status == .ready)
            let archive = try await download { offset in
                try await harness.admin.downloadUserExport(
                    .init(userId: login.userID, exportId: exportID, offset: offset),
                    context: OperatorTests.operatorContext(support.tokens, "DownloadUserExport"))
            }
            #expect(AccountExportStore.hex(Digest.sha256(archive.bytes)) == seen.accountExport?.sha256)
            // A viewer sees the export's state but may not download it.
            let state = try await harness.admin.getUserExport(
                .init(userId: login.userID, exportId: exportID),
                context: OperatorTests.operatorContext(viewer.tokens, "GetUserExport"))
            #expect(state.accountExport?.status == .ready)
            let download = await statusCode {
                _ = try await harness.admin.downloadUserExport(
                    .init(userId: login.userID, exportId: exportID),
                    context: OperatorTests.operatorContext(viewer.tokens, "DownloadUserExport"))
            }
            #expect(download?.code == .permissionDenied)
            // The player sees the export an operator asked for, and an operator's export does not count against
            // the player's limit.
            #expect(try await export(harness, login, appID: app.appId)?.exportId == exportID)
            #expect(try await request(harness, login, appID: app.appId).created)
        }
    }

    @Test func theRetentionSettingTakesAUnit() throws {
        let secrets = try SecretKeyFile.ring()
        let configured = try IdentityConfiguration(
            environment: ["RAVE_IDENTITY_EXPORT_RETENTION": "36h"], secretKeys: secrets)
        #expect(configured.exports.retention == 36 * 3600)
        #expect(IdentityConfiguration(secretKeys: secrets).exports.retention == 7 * 86_400)
        for wrong in ["7", "0s", "7w", "400d", "-1d"] {
            #expect(throws: IdentityError.self) {
                _ = try IdentityConfiguration(
                    environment: ["RAVE_IDENTITY_EXPORT_RETENTION": wrong], secretKeys: secrets)
            }
        }
    }
}

/// A participant's server over mTLS (the `social` certificate) and identity's client to it.
struct ParticipantFixture {
    let certificates: String
    let server: RPCServer
    let client: RPCClient

    init(_ handler: any RPCService) throws {
        certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-export-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "social"])
        server = RPCServer(
            services: [handler], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/social.pem",
                    privateKeyPath: "\(certificates)/social-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: IdentityHarness.group, logger: Logger(label: "participant", level: .critical))
        try server.start()
        client = RPCClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/identity.pem",
                    privateKeyPath: "\(certificates)/identity-key.pem")),
            group: IdentityHarness.group, logger: Logger(label: "export-client", level: .critical))
    }

    func participant(_ name: String) -> AccountExportWorker.Participant {
        AccountExportWorker.Participant(name: name, caller: client)
    }

    func stop() async {
        client.close()
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: certificates)
    }
}

/// An export participant answering in `pages` pages (cursor = the page number): each page two `friends` records
/// numbered in order (the first padded by `padding` characters), the second page also one `blocks` record; the
/// first `failures` calls fail.
final class PagedExporter: ExportV1.ExportParticipantHandler {
    private struct State {
        var failuresLeft: Int
        var calls = 0
        var requests: [ExportV1.ExportUserRequest] = []
        var callersWereIdentity = true
    }

    private let state: Mutex<State>
    private let pages: Int
    private let padding: Int

    init(pages: Int, padding: Int = 0, failures: Int = 0) {
        self.pages = pages
        self.padding = padding
        state = Mutex(State(failuresLeft: failures))
    }

    var calls: Int { state.withLock { $0.calls } }
    var requests: [ExportV1.ExportUserRequest] { state.withLock { $0.requests } }
    var callersWereIdentity: Bool { state.withLock { $0.callersWereIdentity } }
    func fail(times: Int) { state.withLock { $0.failuresLeft = times } }

    func exportUser(
        _ request: ExportV1.ExportUserRequest, context: RequestContext
    ) async throws -> ExportV1.ExportUserResponse {
        try state.withLock { state throws(RPCError) in
            state.calls += 1
            state.callersWereIdentity = state.callersWereIdentity && context.peer.role == .service("identity")
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw RPCError.unavailable("the participant is still starting")
            }
            state.requests.append(request)
        }
        let page = Int(request.cursor) ?? 0
        let pad = String(repeating: "x", count: padding)
        var sections = [
            ExportV1.ExportSection(
                name: "friends",
                records: [
                    Array("{\"n\":\(page * 2),\"pad\":\"\(pad)\"}".utf8), Array("{\"n\":\(page * 2 + 1)}".utf8),
                ])
        ]
        if page == 1 { sections.append(ExportV1.ExportSection(name: "blocks", records: [Array("{\"b\":1}".utf8)])) }
        return ExportV1.ExportUserResponse(sections: sections, nextCursor: page + 1 < pages ? String(page + 1) : "")
    }
}
