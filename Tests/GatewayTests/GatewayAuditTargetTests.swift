import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import Testing

@testable import Gateway

/// The gateway records the player an operator's admin write is about as the audit entry's target user, so a
/// player's audit trail lists exports, downloads and money movements (docs/identity.md, "Audit log").
@Suite("Gateway audit entries name their player", .timeLimit(.minutes(3)))
struct GatewayAuditTargetTests {
    typealias Operators = GatewayOperatorTests

    @Test func anOperatorsDepositAndExportRequestAreInThePlayersAuditTrail() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await Operators.connect(stack, certificate: "admin")
            defer { admin.close() }
            let (publisher, user) = try await Operators.fixture(stack, admin: admin)
            let tokens = try await Operators.operatorTokens(
                stack, admin: admin, email: "money@example.com", role: .operator, publisherID: publisher)
            let client = try await Operators.connect(stack)
            defer { client.close() }
            let options = Operators.options(tokens.accessToken, reason: "player asked")
            let deposit = WalletV1.DepositRequest(
                transfer: .init(
                    operationId: "op-1", userId: user, currency: "USD", economy: .sandbox, amount: "1.00",
                    reason: "goodwill"))
            // No wallet runs here: the deposit is recorded, then fails to reach it.
            _ = try? await client.call(
                method: "rave.wallet.v1.WalletAdmin/Deposit", request: deposit.protobufBytes(), options: options)
            _ = try? await client.call(
                method: "rave.identity.v1.IdentityAdmin/RequestUserExport",
                request: IdentityV1.RequestUserExportRequest(userId: user).protobufBytes(), options: options)
            // A write about no player names none.
            _ = try? await client.call(
                method: "rave.identity.v1.IdentityAdmin/SetMailTemplate",
                request: IdentityV1.SetMailTemplateRequest(
                    appId: stack.appID, kind: .verifyEmail, language: "en", subject: "Code", body: "{{code}}"
                ).protobufBytes(), options: options)

            let audit = IdentityV1.IdentityAdminClient(caller: admin)
            let trail = try await audit.listAuditEvents(.init(targetUserId: user)).events
            #expect(
                Set(trail.map(\.method))
                    == ["rave.wallet.v1.WalletAdmin/Deposit", "rave.identity.v1.IdentityAdmin/RequestUserExport"])
            #expect(trail.allSatisfy { $0.actor == "money@example.com" && $0.reason == "player asked" })
            #expect(trail.allSatisfy { $0.targetUserId == user })
            let template = try await audit.listAuditEvents(
                .init(method: "rave.identity.v1.IdentityAdmin/SetMailTemplate")
            ).events
            #expect(template.count == 1 && template.first?.targetUserId == "")
        }
    }

    /// One rule: the request's `user_id`, else the one `user_id` of its message fields; nothing else.
    @Test func theTargetUserIsTheRequestsUserIDOrItsMessageFieldsOne() {
        let user = String(repeating: "ab", count: 16)
        let other = String(repeating: "cd", count: 16)
        #expect(AdminAudit.targetUser(of: ["userId": user, "reason": "x"]) == user)
        #expect(AdminAudit.targetUser(of: ["transfer": ["userId": user, "amount": "1.00"]]) == user)
        #expect(AdminAudit.targetUser(of: ["a": ["userId": user], "b": ["userId": other]]) == nil)
        #expect(AdminAudit.targetUser(of: ["userId": "not-an-id"]) == nil)
        #expect(AdminAudit.targetUser(of: ["userIds": [user]]) == nil)
        #expect(AdminAudit.targetUser(of: ["appId": user]) == nil)
    }
}
