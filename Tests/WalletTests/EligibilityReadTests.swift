import RaveMessages
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Wallet

/// GetEligibility answers what SetEligibility set, to viewers of the application's publisher (docs/wallet.md,
/// "Operator scope").
@Suite("Wallet eligibility read", .timeLimit(.minutes(3)))
struct EligibilityReadTests {
    @Test func getEligibilityAnswersTheLastSetCountriesSortedWithinThePublisherScope() async throws {
        try await OperatorScopeTests.with { stack in
            let admin = WalletV1.WalletAdminClient(caller: stack.client)
            let none = try await admin.getEligibility(.init(appId: stack.appA), options: stack.operatorOfA("viewer"))
            #expect(none.realMoneyCountries.isEmpty)
            _ = try await admin.setEligibility(
                .init(appId: stack.appA, realMoneyCountries: ["NL", "GB"]), options: stack.operatorOfA())
            _ = try await admin.setEligibility(
                .init(appId: stack.appB, realMoneyCountries: ["FR"]), options: stack.certificate)
            let read = try await admin.getEligibility(.init(appId: stack.appA), options: stack.operatorOfA("viewer"))
            #expect(read.realMoneyCountries == ["GB", "NL"])
            let byOwner = try await admin.getEligibility(.init(appId: stack.appB), options: stack.ownerOfAll)
            #expect(byOwner.realMoneyCountries == ["FR"])

            let refused = await rpcFailure {
                _ = try await admin.getEligibility(.init(appId: stack.appA), options: stack.operatorOfB("viewer"))
            }
            #expect(refused?.code == .permissionDenied)
            #expect(
                refused?.message
                    == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                    + "belongs to publisher \(stack.publisherA)")
            let malformed = await rpcFailure {
                _ = try await admin.getEligibility(.init(appId: "game"), options: stack.certificate)
            }
            #expect(malformed?.code == .invalidArgument)
            #expect(malformed?.message == "app_id must be 32 lowercase hex digits, got \"game\"")

            _ = try await admin.setEligibility(.init(appId: stack.appA), options: stack.operatorOfA())
            #expect(
                try await admin.getEligibility(.init(appId: stack.appA), options: stack.certificate).realMoneyCountries
                    .isEmpty)
        }
    }
}
