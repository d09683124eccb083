import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Push

/// Many registrations of one device token at once: each answers what it did (never ABORTED, INTERNAL or
/// UNAVAILABLE), and the token ends with one owner or none.
@Suite("Contention on one device token")
struct PushContentionTests {
    static let crowd = 200

    @Test func oneTokenRegisteredAndUnregisteredByManyCallsAtOnceEndsConsistent() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let context = PushFixture.playerContext(user)
            let results = await ConcurrentCalls.run(Self.crowd) { index in
                if index.isMultiple(of: 2) {
                    _ = try await fixture.register(user, token: "contended")
                } else {
                    _ = try await fixture.service.unregisterToken(.init(token: "contended"), context: context)
                }
            }
            #expect(ConcurrentCalls.failures(results) == [:], "registrations")
            let rows = try await fixture.pool.query(
                "SELECT count(*) FROM device_tokens WHERE token = 'contended'")
            #expect(try rows[0].decode(Int64.self, at: 0) <= 1)
            // Whatever order they ran in, one more registration leaves exactly one row, the user's.
            let info = try await fixture.register(user, token: "contended")
            #expect(info?.userId == user.hex)
        }
    }

    @Test func oneTokenRegisteredByManyUsersAtOnceEndsWithOneOwner() async throws {
        try await PushFixture.with { fixture in
            let users = (0..<Self.crowd).map { _ in RaveID.random() }
            let results = await ConcurrentCalls.run(Self.crowd) { index in
                try await fixture.register(users[index], token: "shared-device")
            }
            #expect(ConcurrentCalls.failures(results) == [:], "registrations")
            let owners = try await fixture.pool.query(
                "SELECT user_id FROM device_tokens WHERE token = 'shared-device'"
            ).map { try $0.decode(RaveID.self, at: 0) }
            #expect(owners.count == 1)
            #expect(owners.allSatisfy(users.contains))
        }
    }
}
