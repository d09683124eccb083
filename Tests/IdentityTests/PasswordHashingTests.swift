import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTestSupport
import Testing

@testable import Identity

#if canImport(Glibc)
import Glibc
#endif

/// Bounded password hashing: a fixed number of hashes at once on threads of their own, a short queue, and
/// RESOURCE_EXHAUSTED (not processed, with a retry hint) beyond it before anything is spent.
@Suite("Password hashing")
struct PasswordHashingTests {
    /// Takes `count` slots of `hashers` and holds them until the returned latch opens; returns once all are held.
    static func holdSlots(
        _ count: Int, of hashers: PasswordHasherPool
    ) async -> (release: ShutdownLatch, holders: [Task<Void, any Error>]) {
        let release = ShutdownLatch()
        var holders: [Task<Void, any Error>] = []
        for _ in 0..<count {
            let entered = ShutdownLatch()
            holders.append(
                Task {
                    try await hashers.withSlot { _ in
                        entered.open()
                        await release.wait()
                    }
                })
            await entered.wait()
        }
        return (release, holders)
    }

    /// The status `body` throws (an `IdentityError` or an `RPCError`), or nil.
    static func rpcError(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as IdentityError {
            return error.rpcError
        } catch {
            return error as? RPCError
        }
    }

    @Test func passwordAttemptsBeyondTheQueueAreRefusedBeforeAnyHash() async throws {
        try await IdentityHarness.with(configure: {
            $0.passwordHashers = 1; $0.passwordQueue = 1
        }) { harness in
            let app = try await harness.makeApplication()
            let device = IdentityV1.DeviceInfo(deviceId: "queue")
            _ = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: device, email: "queued@example.com", password: "password123",
                    birthYear: 1990, country: "FR"), context: IdentityHarness.anonymous)
            let hashers = harness.dependencies.passwordHashers
            let (release, holders) = await Self.holdSlots(2, of: hashers)
            let started = hashers.hashesStarted
            let context = IdentityHarness.context(caller: nil, metadata: ["rave-client-address": "192.0.2.44"])
            let refused = await Self.rpcError {
                _ = try await harness.player.loginWithPassword(
                    .init(appId: app.appId, device: device, email: "queued@example.com", password: "password123"),
                    context: context)
            }
            #expect(refused?.code == .resourceExhausted)
            #expect(refused?.notProcessed == true)
            #expect(refused?.message.contains("retry after") == true)
            let retry = try GatewayV1.RetryInfo(protobufBytes: refused?.details ?? [])
            #expect(retry.retryAfterMs > 0)
            let signUp = await Self.rpcError {
                _ = try await harness.player.signUp(
                    .init(
                        appId: app.appId, device: device, email: "late@example.com", password: "password123",
                        birthYear: 1990, country: "FR"), context: context)
            }
            #expect(signUp?.code == .resourceExhausted)
            // Refused before any hash, and before the throttle charged anything.
            #expect(hashers.hashesStarted == started)
            let counters = try await harness.pool.execute(
                PostgresStatement(
                    name: "test_throttle_count",
                    sql: "SELECT count(*)::bigint AS n FROM login_throttle WHERE key LIKE $1"),
                ["%192.0.2.44%"])
            #expect(try counters[0].decode(Int64.self, column: "n") == 0)

            release.open()
            for holder in holders { try await holder.value }
            let login = try await harness.player.loginWithPassword(
                .init(appId: app.appId, device: device, email: "queued@example.com", password: "password123"),
                context: context)
            #expect(login.sessionTokens != nil)
            #expect(hashers.hashesStarted == started + 1)
            #expect(hashers.slotsTaken == 0)
        }
    }

    @Test func hashesRunOnThreadsBelowNormalPriority() async throws {
        let hashers = try PasswordHasherPool(
            hasher: PasswordHasher(parameters: .testing), threads: 1, queueLimit: 0, metrics: MetricsRegistry())
        let nice = try await hashers.withSlot { _ in
            try await hashers.onHashingThread { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        }
        #expect(nice == 10)
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0)
    }

    @Test func passwordLoginsBeyondCapacityAreRefusedOverTheNetwork() async throws {
        let environment = ["RAVE_IDENTITY_PASSWORD_HASHERS": "1", "RAVE_IDENTITY_PASSWORD_QUEUE": "0"]
        try await IdentityRuntimeTests.withRuntime(environment: environment) { runtime, service, connect in
            #expect(service.passwordHashers.threads == 1 && service.passwordHashers.queueLimit == 0)
            let applications = ApplicationStore(database: runtime.context.pool)
            let publisher = try await applications.createPublisher(name: "Publisher")
            let app = try await applications.createApplication(
                publisherID: try #require(RaveID(publisher.publisherId)), name: "Game", settings: .init())
            let connection = try connect("gateway")
            defer { connection.close() }
            let client = IdentityV1.IdentityClient(caller: connection)
            let options = CallOptions(timeout: .seconds(30), maxRetries: 0)
            let device = IdentityV1.DeviceInfo(deviceId: "network")
            _ = try await client.signUp(
                .init(
                    appId: app.id.hex, device: device, email: "wire@example.com", password: "password123",
                    birthYear: 1990, country: "FR"), options: options)

            let (release, holders) = await Self.holdSlots(1, of: service.passwordHashers)
            let started = service.passwordHashers.hashesStarted
            let refused = await Self.rpcError {
                _ = try await client.loginWithPassword(
                    .init(appId: app.id.hex, device: device, email: "wire@example.com", password: "password123"),
                    options: options)
            }
            #expect(refused?.code == .resourceExhausted)
            #expect(refused?.notProcessed == true)
            #expect(try GatewayV1.RetryInfo(protobufBytes: refused?.details ?? []).retryAfterMs > 0)
            #expect(service.passwordHashers.hashesStarted == started)

            release.open()
            for holder in holders { try await holder.value }
            let login = try await client.loginWithPassword(
                .init(appId: app.id.hex, device: device, email: "wire@example.com", password: "password123"),
                options: options)
            #expect(login.sessionTokens != nil)
            #expect(service.passwordHashers.hashesStarted == started + 1)
        }
    }

    @Test func hashingSettingsComeFromTheEnvironment() throws {
        let keys = try SecretKeyFile.ring()
        let defaults = try IdentityConfiguration(environment: [:], secretKeys: keys)
        #expect(defaults.passwordHashers == ProcessInfo.processInfo.activeProcessorCount)
        #expect(defaults.passwordQueue == 2 * defaults.passwordHashers)
        #expect(defaults.loginThrottle == LoginThrottle.Policy())
        let set = try IdentityConfiguration(
            environment: [
                "RAVE_IDENTITY_PASSWORD_HASHERS": "3", "RAVE_IDENTITY_LOGIN_WINDOW_SECONDS": "600",
                "RAVE_IDENTITY_LOGIN_FAILURES_PER_ADDRESS": "500",
            ], secretKeys: keys)
        #expect(set.passwordHashers == 3 && set.passwordQueue == 6)
        #expect(set.loginThrottle.window == 600 && set.loginThrottle.perAddress == 500)
        #expect(
            throws: IdentityError.invalidArgument("RAVE_IDENTITY_PASSWORD_QUEUE must be 0…10000, got \"lots\"")
        ) {
            try IdentityConfiguration(environment: ["RAVE_IDENTITY_PASSWORD_QUEUE": "lots"], secretKeys: keys)
        }
    }
}
