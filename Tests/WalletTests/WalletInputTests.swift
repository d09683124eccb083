import RaveMessages
import RavePostgres
import RaveProtobuf
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Wallet

/// Input the wallet must refuse or check before money moves: transfers to users identity does not know, ids in
/// another spelling, text with NULs, and ranges.
@Suite struct WalletInputTests {
    static func transfer(_ user: String, amount: String = "5.00") -> WalletV1.OperatorTransfer {
        WalletV1.OperatorTransfer(
            operationId: RaveID.random().hex, userId: user, currency: "USD", economy: .real, amount: amount)
    }

    @Test func operatorTransfersToAUserIdentityDoesNotKnowAreNotFoundAndMoveNothing() async throws {
        try await WalletFixture.with { fixture in
            let stranger = RaveID.random()
            let context = WalletFixture.adminContext()
            await expectStatus(.notFound, "no user \(stranger.hex): operator transfers need an existing user") {
                try await fixture.admin.deposit(.init(transfer: Self.transfer(stranger.hex)), context: context)
            }
            await expectStatus(.notFound) {
                try await fixture.admin.withdraw(.init(transfer: Self.transfer(stranger.hex)), context: context)
            }
            await expectStatus(.notFound) {
                try await fixture.admin.adjust(
                    .init(transfer: Self.transfer(stranger.hex, amount: "-1.00")), context: context)
            }
            let accounts = try await fixture.pool.query("SELECT count(*) FROM accounts WHERE user_id = $1", [stranger])
            #expect(try accounts[0].decode(Int64.self, at: 0) == 0)
            let operations = try await fixture.pool.query("SELECT count(*) FROM operator_operations")
            #expect(try operations[0].decode(Int64.self, at: 0) == 0)
            // Once identity knows the user, the same transfer goes through.
            fixture.identity.add(stranger)
            let deposited = try await fixture.admin.deposit(
                .init(transfer: Self.transfer(stranger.hex)), context: context)
            #expect(deposited.balance == "5.00")
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func aMergedSourceIsRefusedNamingItsTargetButARecordedOperationStillReplays() async throws {
        try await WalletFixture.with { fixture in
            let source = RaveID.random()
            let target = RaveID.random()
            fixture.identity.add(source)
            fixture.identity.add(target)
            let context = WalletFixture.adminContext()
            let before = Self.transfer(source.hex)
            let first = try await fixture.admin.deposit(.init(transfer: before), context: context)
            fixture.identity.merge(source, into: target)
            await expectStatus(
                .failedPrecondition, "user \(source.hex) was merged into \(target.hex); move the money to that user"
            ) {
                try await fixture.admin.deposit(.init(transfer: Self.transfer(source.hex)), context: context)
            }
            #expect(try await fixture.admin.deposit(.init(transfer: before), context: context) == first)
        }
    }

    @Test func identityOutOfReachIsUnavailableAndNotProcessed() async throws {
        try await WalletFixture.with { fixture in
            let closed = RPCClient(
                host: "127.0.0.1", port: try LoopbackPort.unused(),
                tls: try TLSContext(.client(trustRootsPath: "\(IdentityPeer.shared.certificates)/ca.pem")),
                group: WalletFixture.group, logger: Logger(label: "closed", level: .critical))
            defer { closed.close() }
            let dependencies = WalletDependencies(pool: fixture.pool, users: IdentityUserDirectory(identity: closed))
            let user = RaveID.random()
            do {
                _ = try await AdminHandlers(dependencies: dependencies).deposit(
                    .init(transfer: Self.transfer(user.hex)), context: WalletFixture.adminContext())
                Issue.record("a deposit went through without identity")
            } catch {
                let status = RPCError(mapping: error, requestID: "r")
                #expect(status.code == .unavailable)
                #expect(status.notProcessed)
            }
            #expect(try await fixture.balance(of: user) == 0)
        }
    }

    @Test func idsInAnotherSpellingAreRefused() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            await expectStatus(
                .invalidArgument, "user_id must be 32 lowercase hex digits, got \"\(user.hex.uppercased())\""
            ) {
                try await fixture.admin.deposit(
                    .init(transfer: Self.transfer(user.hex.uppercased())), context: WalletFixture.adminContext())
            }
            var bet = WalletFixture.bet("1.00")
            bet.betId = RaveID.random().hex.uppercased()
            await expectStatus(.invalidArgument) {
                try await fixture.service.placeBet(.init(bet: bet), context: WalletFixture.playerContext(user))
            }
            await expectStatus(.invalidArgument) {
                try await fixture.admin.setEligibility(
                    .init(appId: WalletFixture.appID.uppercased(), realMoneyCountries: ["GB"]),
                    context: WalletFixture.adminContext())
            }
        }
    }

    /// A wager or client seed holding a NUL is refused whole, and nothing is stored.
    ///
    /// protobuf-c cut them at the NUL: "1.00\0junk" placed a 1.00 bet, "seed\0tail" settled with "seed".
    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let method = try #require(
                fixture.service.methods.first { $0.name == "rave.wallet.v1.Wallet/PlaceBet" })
            var junkWager = WalletFixture.bet("1.00\u{0}junk")
            junkWager.betId = RaveID.random().hex
            var tailedSeed = WalletFixture.bet("1.00")
            tailedSeed.clientSeed = "seed\u{0}tail"
            for bet in [junkWager, tailedSeed] {
                let error = await #expect(throws: ProtoDecodingError.self) {
                    _ = try await method.handler(
                        WalletV1.PlaceBetRequest(bet: bet).protobufBytes(), WalletFixture.playerContext(user))
                }
                #expect(error.map { RPCError(mapping: $0, requestID: "r").code } == .invalidArgument)
            }
            let bets = try await fixture.pool.query("SELECT count(*) FROM bets")
            #expect(try bets[0].decode(Int64.self, at: 0) == 0)
            #expect(try await fixture.balance(of: user) == 500)
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }

    @Test func transactionPagesFollowTheirRange() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let context = WalletFixture.playerContext(user)
            #expect(try await fixture.service.listTransactions(.init(pageSize: 0), context: context).entries.count == 1)
            await expectStatus(.invalidArgument, "page_size must be 1…100 (0 means 20), got 101") {
                try await fixture.service.listTransactions(.init(pageSize: 101), context: context)
            }
            await expectStatus(.invalidArgument, "page_size must be 1…100 (0 means 20), got -1") {
                try await fixture.service.listTransactions(.init(pageSize: -1), context: context)
            }
        }
    }
}
