import RaveCrypto
import RaveMessages
import RavePostgres
import RaveServices

// What the package's other modules (the identity benchmark, Benchmarks/Identity) call in-process. `package` access:
// nothing outside this package sees it.
extension IdentityDependencies {
    /// Starts the service on a migrated schema with the settings `RAVE_IDENTITY_*` of `environment`.
    package static func start(
        pool: PostgresPool, environment: [String: String], secretKeys: SecretKeyRing
    ) async throws -> IdentityDependencies {
        try await start(
            pool: pool, configuration: IdentityConfiguration(environment: environment, secretKeys: secretKeys))
    }

    /// Starts the service on a migrated schema with the default settings but for password hashing (`parameters`):
    /// the identity other services' tests start as their peer hashes with `PasswordHasher.Parameters.testing`.
    package static func start(
        pool: PostgresPool, secretKeys: SecretKeyRing, passwordParameters: PasswordHasher.Parameters
    ) async throws -> IdentityDependencies {
        var configuration = IdentityConfiguration(secretKeys: secretKeys)
        configuration.passwordParameters = passwordParameters
        return try await start(pool: pool, configuration: configuration)
    }

    /// rave.identity.v1.Identity over this service.
    package var playerHandler: any IdentityV1.IdentityHandler { PlayerHandlers(dependencies: self) }

    /// rave.identity.v1.IdentityInternal over this service.
    package var internalHandler: any IdentityV1.IdentityInternalHandler { InternalHandlers(dependencies: self) }

    /// Creates a publisher; its id.
    package func createPublisher(name: String) async throws -> RaveID {
        let publisher = try await ApplicationStore(database: pool).createPublisher(name: name)
        guard let id = RaveID(publisher.publisherId) else { throw IdentityError.internalError("bad publisher id") }
        return id
    }

    /// Creates an application of `publisherID`; its id.
    package func createApplication(publisherID: RaveID, name: String, crossAppLogin: Bool) async throws -> RaveID {
        try await ApplicationStore(database: pool).createApplication(
            publisherID: publisherID, name: name, settings: .init(crossAppLogin: crossAppLogin)
        ).id
    }

    /// Threads that hash passwords.
    package var passwordHashingThreads: Int { passwordHashers.threads }

    /// Password checks that may wait for a hashing thread before more are refused.
    package var passwordQueueLimit: Int { passwordHashers.queueLimit }

    /// One password check against the decoy hash, on the calling thread: what a login with a wrong password costs.
    package func hashDecoyPassword() throws {
        _ = try passwordHashers.hasher.verify("not the password", against: passwordHashers.decoyHash)
    }

    /// A failed password login's work on the calling thread rather than the hashing threads: the credential
    /// lookup and one hash; throws UNAUTHENTICATED, as the login would.
    package func failPasswordLoginOnCallingThread(email: String) async throws {
        _ = try await CredentialStore(database: pool).password(email: email)
        try hashDecoyPassword()
        throw IdentityError.unauthenticated("the email or password is wrong")
    }
}

/// What an account deletion leaves in identity's database (docs/identity.md, "Deleting an account"), for checks of
/// leftovers that span every service's database.
package enum IdentityErasureColumns {
    /// Every column of identity's tables that can name a user, as "table.column".
    package static var userColumns: [String] { AccountErasureStore.userColumns.map { "\($0.table).\($0.column)" } }
    /// The columns that still name a deleted user, by design: every other column must not.
    package static var kept: Set<String> { AccountErasureStore.keptColumns }
}
