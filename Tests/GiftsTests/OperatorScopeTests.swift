import Foundation
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Gifts

/// Operators reach only their own publisher's gift types (docs/gifts.md, "Operator scope"): the real identity answers
/// which publisher an application belongs to, and gifts runs with its production wiring.
@Suite("Gifts operator scope", .timeLimit(.minutes(3)))
struct OperatorScopeTests {
    static func with(_ body: (OperatorScopeStack) async throws -> Void) async throws {
        try await OperatorScopeStack.with(
            "gifts", migrations: GiftsMain.migrationsDirectory, settings: ["RAVE_GIFTS_SOCIAL_ADDRESS": "127.0.0.1:1"],
            services: { try await GiftsMain.services(context: $0) }, body)
    }

    static let coins = GiftsV1.GiftType(key: "coins", name: "Coins", requestable: true)

    static func names(_ stack: OperatorScopeStack, app: String) async throws -> [String] {
        try await GiftsV1.GiftsAdminClient(caller: stack.client).listGiftTypes(
            .init(appId: app), options: stack.certificate
        ).giftTypes.map(\.name)
    }

    @Test func anOperatorManagesItsOwnPublishersGiftTypes() async throws {
        try await Self.with { stack in
            let admin = GiftsV1.GiftsAdminClient(caller: stack.client)
            for app in [stack.appA, stack.otherAppA] {
                _ = try await admin.createGiftType(
                    .init(appId: app, giftType: Self.coins), options: stack.operatorOfA())
                var renamed = Self.coins
                renamed.name = "Gold coins"
                _ = try await admin.updateGiftType(.init(appId: app, giftType: renamed), options: stack.operatorOfA())
                let listed = try await admin.listGiftTypes(.init(appId: app), options: stack.operatorOfA("viewer"))
                #expect(listed.giftTypes.map(\.name) == ["Gold coins"])
                let found = try await admin.getGiftType(
                    .init(appId: app, key: "coins"), options: stack.operatorOfA("viewer"))
                #expect(found.giftType?.name == "Gold coins")
            }
        }
    }

    @Test func anOperatorOfAnotherPublisherIsRefusedAndNothingChanges() async throws {
        try await Self.with { stack in
            let admin = GiftsV1.GiftsAdminClient(caller: stack.client)
            _ = try await admin.createGiftType(
                .init(appId: stack.appA, giftType: Self.coins), options: stack.operatorOfA())
            var stolen = Self.coins
            stolen.name = "Stolen"
            let refusals = [
                await rpcFailure {
                    _ = try await admin.createGiftType(
                        .init(appId: stack.appA, giftType: .init(key: "gems", name: "Gems")),
                        options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.updateGiftType(
                        .init(appId: stack.appA, giftType: stolen), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.listGiftTypes(.init(appId: stack.appA), options: stack.operatorOfB("viewer"))
                },
                await rpcFailure {
                    _ = try await admin.getGiftType(
                        .init(appId: stack.appA, key: "coins"), options: stack.operatorOfB())
                },
            ]
            for refusal in refusals {
                #expect(refusal?.code == .permissionDenied)
                #expect(
                    refusal?.message
                        == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                        + "belongs to publisher \(stack.publisherA)")
            }
            #expect(try await Self.names(stack, app: stack.appA) == ["Coins"])
        }
    }

    @Test func anOwnerOfAllPublishersAndTheAdminCertificateReachEveryApplication() async throws {
        try await Self.with { stack in
            let admin = GiftsV1.GiftsAdminClient(caller: stack.client)
            _ = try await admin.createGiftType(
                .init(appId: stack.appA, giftType: Self.coins), options: stack.ownerOfAll)
            _ = try await admin.createGiftType(
                .init(appId: stack.appB, giftType: Self.coins), options: stack.certificate)
            #expect(try await Self.names(stack, app: stack.appA) == ["Coins"])
            #expect(try await Self.names(stack, app: stack.appB) == ["Coins"])
        }
    }

    @Test func theServiceChecksTheRoleItselfWhateverTheGatewayLetThrough() async throws {
        try await Self.with { stack in
            let admin = GiftsV1.GiftsAdminClient(caller: stack.client)
            let viewer = await rpcFailure {
                _ = try await admin.createGiftType(
                    .init(appId: stack.appA, giftType: Self.coins), options: stack.operatorOfA("viewer"))
            }
            #expect(viewer?.code == .permissionDenied)
            #expect(
                viewer?.message
                    == "rave.gifts.v1.GiftsAdmin/CreateGiftType needs the operator role operator or higher; this "
                    + "operator's role is viewer")
            let names = try await Self.names(stack, app: stack.appA)
            #expect(names.isEmpty)
        }
    }
}
