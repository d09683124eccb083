import RaveMessages
import RavePostgres
import Testing

@testable import Identity

/// The SQL that `LookupExternal` and `GetMergedIdentities` run, in their stores.
@Suite("Identity: stores behind the lookups")
struct IdentityStoreTests {
    @Test func aLinkedSubjectNamesItsUserAndAnUnknownOneNobody() async throws {
        try await IdentityHarness.with { harness in
            let user = RaveID.random()
            try await harness.pool.query("INSERT INTO users (id) VALUES ($1)", [user])
            try await harness.pool.query(
                "INSERT INTO provider_links (provider, subject, user_id, email) VALUES ('google', 's-1', $1, NULL)",
                [user])
            let links = ProviderStore(database: harness.pool)
            #expect(try await links.linkedUser(provider: "google", subject: "s-1") == user)
            #expect(try await links.linkedUser(provider: "google", subject: "s-2") == nil)
        }
    }

    @Test func aUserNobodyWasMergedIntoHasNoMergedIdentities() async throws {
        try await IdentityHarness.with { harness in
            let merged = try await MergeStore(database: harness.pool).mergedIdentities(of: .random())
            #expect(merged.isEmpty)
        }
    }
}
