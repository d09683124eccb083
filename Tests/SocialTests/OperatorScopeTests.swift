import Foundation
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Social

/// Operators reach only their own publisher's lists (docs/social.md, "Operator scope"): the real identity answers
/// which publisher an application belongs to, and social runs with its production wiring.
@Suite("Social operator scope", .timeLimit(.minutes(3)))
struct OperatorScopeTests {
    static func with(_ body: (OperatorScopeStack) async throws -> Void) async throws {
        try await OperatorScopeStack.with(
            "social", migrations: SocialMain.migrationsDirectory,
            services: { try await SocialMain.services(context: $0) }, body)
    }

    static func list(
        _ app: String, _ key: String, scope: SocialV1.ListScope = .application
    )
        -> SocialV1.CreateListRequest
    {
        .init(appId: app, key: key, kind: .friends, scope: scope)
    }

    /// The keys of the custom lists `app` sees.
    static func keys(_ stack: OperatorScopeStack, app: String) async throws -> Set<String> {
        Set(
            try await SocialV1.SocialAdminClient(caller: stack.client).getLists(
                .init(appId: app), options: stack.certificate
            ).lists.map(\.key))
    }

    @Test func anOperatorCreatesAndReadsItsOwnPublishersLists() async throws {
        try await Self.with { stack in
            let admin = SocialV1.SocialAdminClient(caller: stack.client)
            let before = try await Self.keys(stack, app: stack.appA)
            _ = try await admin.createList(Self.list(stack.appA, "guild"), options: stack.operatorOfA())
            _ = try await admin.createList(
                Self.list(stack.appA, "alliance", scope: .global), options: stack.operatorOfA())
            let lists = try await admin.getLists(.init(appId: stack.appA), options: stack.operatorOfA("viewer"))
            #expect(Set(lists.lists.map(\.key)) == before.union(["guild", "alliance"]))
            // A global list is the publisher's: the other application of A sees it.
            #expect(try await Self.keys(stack, app: stack.otherAppA).contains("alliance"))
        }
    }

    @Test func anOperatorOfAnotherPublisherIsRefusedAndNothingChanges() async throws {
        try await Self.with { stack in
            let admin = SocialV1.SocialAdminClient(caller: stack.client)
            let before = try await Self.keys(stack, app: stack.appA)
            let refusals = [
                await rpcFailure {
                    _ = try await admin.createList(Self.list(stack.appA, "guild"), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.createList(
                        Self.list(stack.appA, "alliance", scope: .global), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.getLists(.init(appId: stack.appA), options: stack.operatorOfB("viewer"))
                },
            ]
            for refusal in refusals {
                #expect(refusal?.code == .permissionDenied)
                #expect(
                    refusal?.message
                        == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                        + "belongs to publisher \(stack.publisherA)")
            }
            #expect(try await Self.keys(stack, app: stack.appA) == before)
        }
    }

    @Test func anOwnerOfAllPublishersAndTheAdminCertificateReachEveryApplication() async throws {
        try await Self.with { stack in
            let admin = SocialV1.SocialAdminClient(caller: stack.client)
            _ = try await admin.createList(Self.list(stack.appA, "guild"), options: stack.ownerOfAll)
            _ = try await admin.createList(Self.list(stack.appB, "guild"), options: stack.certificate)
            #expect(try await Self.keys(stack, app: stack.appA).contains("guild"))
            #expect(try await Self.keys(stack, app: stack.appB).contains("guild"))
        }
    }

    @Test func theServiceChecksTheRoleItselfWhateverTheGatewayLetThrough() async throws {
        try await Self.with { stack in
            let admin = SocialV1.SocialAdminClient(caller: stack.client)
            let viewer = await rpcFailure {
                _ = try await admin.createList(Self.list(stack.appA, "guild"), options: stack.operatorOfA("viewer"))
            }
            #expect(viewer?.code == .permissionDenied)
            #expect(
                viewer?.message
                    == "rave.social.v1.SocialAdmin/CreateList needs the operator role operator or higher; this "
                    + "operator's role is viewer")
            let keys = try await Self.keys(stack, app: stack.appA)
            #expect(!keys.contains("guild"))
        }
    }
}
