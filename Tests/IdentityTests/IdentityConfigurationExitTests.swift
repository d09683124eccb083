import Foundation
import RaveRuntime
import RaveTestSupport
import Testing

@testable import Identity

/// A wrong identity setting stops start-up as a configuration error (exit status 78 naming the variable), like
/// every other setting of every process, not as a failed start (exit status 1).
@Suite("Identity configuration errors")
struct IdentityConfigurationExitTests {
    @Test(arguments: [
        ("RAVE_IDENTITY_SESSION_DAYS", "0"), ("RAVE_IDENTITY_ACCESS_TOKEN_SECONDS", "soon"),
        ("RAVE_IDENTITY_SOCIAL_ADDRESS", "no-port"),
    ])
    func aBadSettingIsAConfigurationErrorNamingTheVariable(variable: String, value: String) async throws {
        let certificates = try ServiceUnderTest.makeCertificates(for: "identity")
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try await IdentityHarness.withDatabase { url in
            let environment = [
                variable: value, "RAVE_SECRET_KEY_FILE": try SecretKeyFile.write(in: certificates),
            ]
            await #expect {
                let service = try await ServiceUnderTest.start(
                    "identity", certificates: certificates, databaseURL: url,
                    migrations: .directory(IdentityHarness.migrationsDirectory), environment: environment
                ) { context in
                    try await IdentityMain.services(context: context)
                }
                try await service.stop()
            } throws: { error in
                guard let error = error as? RuntimeError else { return false }
                return error.kind == .invalidConfiguration && error.message.contains(variable)
            }
        }
    }
}
