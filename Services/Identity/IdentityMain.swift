import Foundation
import RaveMail
import RaveRPC
import RaveRuntime
import RaveTransport

/// The identity service's entry point: accounts, sessions, profiles and the keys that sign access tokens.
package enum IdentityMain {
    package static func main() async {
        switch CommandLine.arguments.dropFirst().first {
        case "reseal-secrets": exit(await SecretResealCommand.run(environment: ProcessInfo.processInfo.environment))
        default: break
        }
        await RaveServiceMain.run(
            name: "identity", options: RuntimeOptions(migrations: .directory(migrationsDirectory))
        ) {
            context in
            var configuration = context.configuration.rpcServerConfiguration
            configuration.quietMethods.formUnion(polledMethods)
            return RPCServing(services: try await services(context: context), configuration: configuration)
        }
    }

    /// What every gateway polls (the revocation feed every 250 ms, the signing keys every minute): their OK answers
    /// are logged at debug, so identity's log shows calls, not polls.
    static let polledMethods: Set<String> = [
        "rave.identity.v1.IdentityInternal/ListRevocations", "rave.identity.v1.IdentityInternal/SigningKeys",
    ]

    /// The RPC services, plus the outbox delivery (merges, erasures, mails and events), the login throttle's sweeper,
    /// the account deletion poller and the account export worker registered as background services.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let secretKeys = try IdentityConfiguration.secretKeys(environment: context.environment)
        context.logger.info(
            "secret keys loaded",
            [
                ("secret_key_ids", secretKeys.entries.map(\.id).joined(separator: ",")),
                ("sealing_key_id", secretKeys.primaryKeyID),
            ])
        let configuration: IdentityConfiguration
        do {
            configuration = try IdentityConfiguration(environment: context.environment, secretKeys: secretKeys)
        } catch {
            // A setting, not a request: stop start-up as a configuration error (exit status 78) naming it.
            throw RuntimeError(.invalidConfiguration, error.message)
        }
        let dependencies = try await IdentityDependencies.start(
            pool: context.pool, configuration: configuration, blocks: try socialBlocks(context: context, configuration),
            logger: context.logger)
        let mailer = IdentityMailer(
            sender: configuration.smtp.map { SMTPSender(settings: $0) }, secrets: secretKeys,
            logger: context.logger.with("component", "mail"))
        if let smtp = configuration.smtp {
            context.logger.info("mail delivery over SMTP", [("smtp_url", smtp.url), ("from", smtp.from)])
        } else {
            context.logger.warning(
                "RAVE_IDENTITY_SMTP_URL is not set: verification and password reset mails are logged as not sent")
        }
        context.addBackgroundService(
            try MergeDelivery.forService(context: context, participants: configuration.mergeParticipants, mail: mailer))
        context.addBackgroundService(LoginThrottleSweeper(throttle: dependencies.loginThrottle, logger: context.logger))
        context.addBackgroundService(
            AccountDeletionPoller(
                deletions: dependencies.deletions, pool: context.pool,
                interval: configuration.deletionPollInterval, logger: context.logger))
        context.addBackgroundService(try AccountExportWorker.forService(context: context, configuration: configuration))
        context.logger.info(
            "password hashing and login throttle",
            [
                ("hashers", String(configuration.passwordHashers)), ("queue", String(configuration.passwordQueue)),
                ("window_seconds", String(Int(configuration.loginThrottle.window))),
                ("failures_per_pair", String(configuration.loginThrottle.perPair)),
                ("failures_per_account", String(configuration.loginThrottle.perAccount)),
                ("failures_per_address", String(configuration.loginThrottle.perAddress)),
            ])
        context.logger.info(
            "account deletion and export",
            [
                ("grace_seconds", String(Int(configuration.deletionGrace))),
                ("export_retention_seconds", String(Int(configuration.exports.retention))),
            ])
        return dependencies.rpcServices
    }

    /// Social's blocks over mTLS with identity's certificate, when `RAVE_IDENTITY_SOCIAL_ADDRESS` names a social
    /// service; the client lives as long as the process.
    static func socialBlocks(
        context: ServiceContext, _ configuration: IdentityConfiguration
    ) throws -> (any BlockRegistry)? {
        guard let address = configuration.socialAddress else { return nil }
        let client = try context.peerClient(at: address, peer: "social")
        return SocialBlockRegistry(caller: client)
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    package static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
