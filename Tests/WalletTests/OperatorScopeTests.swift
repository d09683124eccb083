import Foundation
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Wallet

/// What operators reach in the wallet (docs/wallet.md, "Operator scope").
///
/// Currencies and games are every publisher's, so only owners of all publishers change them; an application's
/// eligibility is its publisher's; a player's wallet is the platform's, so money movements and reads need only their
/// role. The real identity answers which publisher an application belongs to, and the wallet runs with its
/// production wiring.
@Suite("Wallet operator scope", .timeLimit(.minutes(3)))
struct OperatorScopeTests {
    static func with(_ body: (OperatorScopeStack) async throws -> Void) async throws {
        try await OperatorScopeStack.with(
            "wallet", migrations: WalletMain.migrationsDirectory,
            services: { try WalletMain.services(context: $0) }, body)
    }

    static let dice = WalletV1.Game(
        gameId: "dice", name: "Dice",
        math: .odds(.init(sides: 6, winningNumbers: 3, multiplierNumerator: 19, multiplierDenominator: 10)))

    static func countries(_ stack: OperatorScopeStack, app: String) async throws -> [String] {
        try await stack.service.runtime.context.pool.query(
            "SELECT country FROM real_money_countries WHERE app_id = $1 ORDER BY country", [app]
        ).map { try $0.decode(String.self, at: 0) }
    }

    static func deposit(_ user: String, amount: String = "5.00") -> WalletV1.DepositRequest {
        .init(
            transfer: .init(
                operationId: UUID().uuidString, userId: user, currency: "USD", economy: .sandbox, amount: amount,
                reason: "goodwill"))
    }

    @Test func currenciesAndGamesNeedAnOperatorOfEveryPublisher() async throws {
        try await Self.with { stack in
            let admin = WalletV1.WalletAdminClient(caller: stack.client)
            let currency = await rpcFailure {
                _ = try await admin.createCurrency(.init(code: "GEMS", decimals: 0), options: stack.operatorOfA())
            }
            #expect(currency?.code == .permissionDenied)
            #expect(
                currency?.message
                    == "currencies are shared by every publisher: changing them needs an owner of all publishers or the "
                    + "admin certificate; this operator acts for publisher \(stack.publisherA)")
            let game = await rpcFailure {
                _ = try await admin.createGame(.init(game: Self.dice), options: stack.operatorOfA("owner"))
            }
            #expect(game?.code == .permissionDenied)
            #expect(game?.message.hasPrefix("games are shared by every publisher") == true)
            _ = try await admin.createCurrency(.init(code: "GOLD", decimals: 0), options: stack.ownerOfAll)
            _ = try await admin.createGame(.init(game: Self.dice), options: stack.ownerOfAll)
            _ = try await admin.createCurrency(.init(code: "USD", decimals: 2), options: stack.certificate)
            let currencies = try await stack.service.runtime.context.pool.query(
                "SELECT code FROM currencies ORDER BY code"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(currencies == ["GOLD", "USD"])
        }
    }

    @Test func eligibilityIsTheApplicationsPublishers() async throws {
        try await Self.with { stack in
            let admin = WalletV1.WalletAdminClient(caller: stack.client)
            _ = try await admin.setEligibility(
                .init(appId: stack.appA, realMoneyCountries: ["GB"]), options: stack.operatorOfA())
            let refused = await rpcFailure {
                _ = try await admin.setEligibility(
                    .init(appId: stack.appA, realMoneyCountries: ["US"]), options: stack.operatorOfB())
            }
            #expect(refused?.code == .permissionDenied)
            #expect(
                refused?.message
                    == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                    + "belongs to publisher \(stack.publisherA)")
            #expect(try await Self.countries(stack, app: stack.appA) == ["GB"])
            _ = try await admin.setEligibility(
                .init(appId: stack.appB, realMoneyCountries: ["FR"]), options: stack.ownerOfAll)
            _ = try await admin.setEligibility(
                .init(appId: stack.appA, realMoneyCountries: ["DE"]), options: stack.certificate)
            #expect(try await Self.countries(stack, app: stack.appB) == ["FR"])
            #expect(try await Self.countries(stack, app: stack.appA) == ["DE"])
        }
    }

    @Test func aPlayersWalletIsThePlatformsButEachMovementNeedsItsRole() async throws {
        try await Self.with { stack in
            let identity = try stack.identity.client(as: "gateway")
            defer { identity.close() }
            let login = try await IdentityV1.IdentityClient(caller: identity).guestLogin(
                .init(appId: stack.appA, device: .init(deviceId: "scope-\(UUID())")))
            let user = try #require(login.user?.profile?.userId)
            let admin = WalletV1.WalletAdminClient(caller: stack.client)
            _ = try await admin.createCurrency(.init(code: "USD", decimals: 2), options: stack.certificate)
            // A player's account is not a publisher's (as in identity): any operator with the role moves money.
            _ = try await admin.deposit(Self.deposit(user), options: stack.operatorOfB())
            _ = try await admin.withdraw(
                .init(transfer: Self.deposit(user, amount: "1.00").transfer), options: stack.operatorOfA())
            let viewer = await rpcFailure {
                _ = try await admin.deposit(Self.deposit(user), options: stack.operatorOfB("viewer"))
            }
            #expect(viewer?.code == .permissionDenied)
            #expect(
                viewer?.message
                    == "rave.wallet.v1.WalletAdmin/Deposit needs the operator role operator or higher; this operator's "
                    + "role is viewer")
            let wallet = try await admin.getUserWallet(.init(userId: user), options: stack.operatorOfB("viewer"))
            #expect(wallet.balances.map(\.amount) == ["4.00"])
        }
    }
}
