import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport

/// Assembles account exports (a background service of the runtime, next to `MergeDelivery`; docs/identity.md,
/// "Exporting an account").
///
/// Every `pollInterval` it deletes the archives past their retention, then takes the pending exports that are due
/// one at a time (`FOR UPDATE SKIP LOCKED` with a lease, so replicas share the work and one that dies leaves its
/// export to another): identity's sections from its own tables, then every participant's pages
/// (`rave.export.v1.ExportParticipant/ExportUser` over mTLS with identity's certificate, the merge saga's
/// participants), and stores the archive in pieces of 1 MiB with its SHA-256. A failed attempt is recorded on the
/// export (GetAccountExport shows it) and retried with backoff; after `failureWindow` of failures the export fails.
/// A ready export is mailed about through identity's outbox when the user has a verified email.
final class AccountExportWorker: Service {
    /// A participant the worker asks for its pages.
    struct Participant: Sendable {
        var name: String
        var caller: any RPCCaller
    }

    let name = "account-export-worker"
    private let pool: PostgresPool
    private let participants: [Participant]
    private let closers: [RPCClient]
    private let policy: AccountExportPolicy
    private let secrets: SecretKeyRing
    private let clock: @Sendable () -> Date
    private let callTimeout: Duration
    private let logger: Logger
    private let stopped = ShutdownLatch()

    init(
        pool: PostgresPool, participants: [Participant], closers: [RPCClient] = [], policy: AccountExportPolicy,
        secrets: SecretKeyRing, clock: @escaping @Sendable () -> Date = { Date() },
        callTimeout: Duration = .seconds(30), logger: Logger
    ) {
        self.pool = pool
        self.participants = participants
        self.closers = closers
        self.policy = policy
        self.secrets = secrets
        self.clock = clock
        self.callTimeout = callTimeout
        self.logger = logger.with("component", "account-export")
    }

    /// The worker the runtime runs, calling the configured participants with identity's certificate.
    static func forService(
        context: ServiceContext, configuration: IdentityConfiguration
    ) throws -> AccountExportWorker {
        let tls = try TLSContext(
            .client(
                trustRootsPath: context.configuration.tlsCertificateAuthorityPath,
                certificateChainPath: context.configuration.tlsCertificatePath,
                privateKeyPath: context.configuration.tlsPrivateKeyPath))
        var clients: [RPCClient] = []
        var participants: [Participant] = []
        for participant in configuration.mergeParticipants {
            var client = RPCClient.Configuration()
            client.connectionCount = 1
            let caller = RPCClient(
                host: participant.host, port: participant.port, tls: tls, group: context.group,
                configuration: client, logger: context.logger.with("participant", participant.name))
            clients.append(caller)
            participants.append(Participant(name: participant.name, caller: caller))
        }
        return AccountExportWorker(
            pool: context.pool, participants: participants, closers: clients, policy: configuration.exports,
            secrets: configuration.secretKeys, logger: context.logger)
    }

    func run() async throws {
        let worker = Task { [self] in
            while !Task.isCancelled {
                do {
                    _ = try await runOnce()
                } catch {
                    logger.warning("account export round failed", [("error", "\(error)")])
                }
                try? await Task.sleep(for: policy.pollInterval)
            }
        }
        await stopped.wait()
        worker.cancel()
        await worker.value
        for client in closers { client.close() }
    }

    func shutdown() async {
        stopped.open()
    }

    /// One round: expires what is due, then works every pending export that is due; returns the exports worked.
    @discardableResult
    func runOnce() async throws -> Int {
        let store = AccountExportStore(database: pool)
        while try await store.expire(at: clock(), limit: 100) > 0 {}
        var worked = 0
        while !Task.isCancelled {
            let now = clock()
            guard let export = try await store.claim(at: now, leaseUntil: now + policy.lease) else { break }
            await work(export)
            worked += 1
        }
        return worked
    }

    /// Builds and stores one claimed export, or records why it could not.
    private func work(_ export: AccountExportRecord) async {
        do {
            let archive = try await build(export)
            let digest = Digest.sha256(archive)
            try await complete(export, archive: archive, sha256: digest)
        } catch {
            await fail(export, error: error)
        }
    }

    private func build(_ export: AccountExportRecord) async throws -> [UInt8] {
        let merged = try await AccountExportSections.mergedIDs(of: export.userID, database: pool)
        var archive = ExportArchive(
            exportID: export.id, userID: export.userID, mergedUserIDs: merged, createdAt: export.createdAt)
        var own = ExportArchive.Sections()
        for section in try await AccountExportSections.sections(
            userID: export.userID, mergedIDs: merged, database: pool)
        {
            own.append(section.name, records: section.records.map { Array($0.utf8) })
        }
        archive.add(service: "identity", own)
        var total = own.byteCount
        let options = CallOptions(timeout: callTimeout, maxRetries: 1)
        for participant in participants {
            var sections = ExportArchive.Sections()
            var cursor = ""
            repeat {
                let request = ExportV1.ExportUserRequest(
                    exportId: export.id.hex, userId: export.userID.hex, mergedUserIds: merged.map(\.hex),
                    cursor: cursor)
                let page: ExportV1.ExportUserResponse
                do {
                    page = try await ExportV1.ExportParticipantClient(caller: participant.caller).exportUser(
                        request, options: options)
                } catch {
                    throw IdentityError.unavailable("participant \(participant.name): \(error)")
                }
                try sections.append(page: page.sections, participant: participant.name)
                guard page.nextCursor.isEmpty || page.nextCursor != cursor else {
                    throw IdentityError.unavailable(
                        "participant \(participant.name) answered the same cursor again; it would never end")
                }
                total += page.sections.reduce(0) { $0 + $1.records.reduce(0) { $0 + $1.count + 1 } }
                guard total <= policy.maximumArchiveBytes else {
                    throw ExportTooLarge(limit: policy.maximumArchiveBytes)
                }
                cursor = page.nextCursor
            } while !cursor.isEmpty
            archive.add(service: participant.name, sections)
        }
        return archive.bytes()
    }

    /// Stores the archive and marks the export ready, mailing the user in the same transaction; nothing when the
    /// export is no longer pending (the account was deleted meanwhile).
    private func complete(_ export: AccountExportRecord, archive: [UInt8], sha256: [UInt8]) async throws {
        let now = clock()
        let expiresAt = now + policy.retention
        let stored = try await pool.transaction { transaction -> Bool in
            let store = AccountExportStore(database: transaction)
            guard try await store.lockPending(export.id) != nil else { return false }
            try await store.storeArchive(export.id, archive: archive, sha256: sha256, at: now, expiresAt: expiresAt)
            try await mailReady(export, now: now, expiresAt: expiresAt, in: transaction)
            return true
        }
        if stored {
            logger.info(
                "account export ready",
                [("export_id", export.id.hex), ("size_bytes", String(archive.count))])
        }
    }

    private func mailReady(
        _ export: AccountExportRecord, now: Date, expiresAt: Date, in transaction: PostgresTransaction
    ) async throws {
        let store = AccountExportStore(database: transaction)
        guard let email = try await store.verifiedEmail(userID: export.userID) else { return }
        var appID = export.appID
        if appID == nil { appID = try await store.lastApp(userID: export.userID) }
        guard let appID else { return }
        let application = try await ApplicationStore(database: transaction).application(appID)
        let languages = (try? IdentityMail.languages(export.language)) ?? ["en"]
        let mail = try await AccountExports.readyMail(
            to: email, application: application, languages: languages, now: now, expiresAt: expiresAt,
            in: transaction)
        try await IdentityMail.enqueue(mail, userID: export.userID, secrets: secrets, in: transaction)
    }

    /// Records a failed attempt: retried after the backoff, or failed for good after `failureWindow` of failures
    /// (at once for an archive over the size limit).
    private func fail(_ export: AccountExportRecord, error: any Error) async {
        let now = clock()
        let message = Self.describe(error)
        let store = AccountExportStore(database: pool)
        do {
            if error is ExportTooLarge || now.timeIntervalSince(export.failingSince ?? now) >= policy.failureWindow {
                try await store.markFailed(export.id, error: message, at: now)
                logger.warning("account export failed", [("export_id", export.id.hex), ("error", message)])
            } else {
                let attempts = export.attempts
                try await store.recordFailure(
                    export.id, error: message, at: now, retryAt: now + policy.backoff(afterAttempts: attempts))
                logger.notice(
                    "account export attempt failed; retrying",
                    [("export_id", export.id.hex), ("attempts", String(attempts)), ("error", message)])
            }
        } catch {
            logger.warning(
                "could not record an account export's failure",
                [("export_id", export.id.hex), ("error", "\(error)")])
        }
    }

    /// The failure as GetAccountExport shows it: our own words, never a database's text.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as IdentityError: error.message
        case let error as ExportTooLarge: "the archive would exceed \(error.limit) bytes"
        default: "the export could not be assembled (internal error); it is retried"
        }
    }
}

/// An archive over `AccountExportPolicy.maximumArchiveBytes`: retrying cannot help.
struct ExportTooLarge: Error {
    var limit: Int
}
