import Foundation
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Testing

@testable import Push

/// Operators reach only their own publisher's notifications and templates (docs/push.md, "Operator scope"): push
/// asks the real identity which publisher an application belongs to, over the client its production wiring makes.
@Suite("Push operator scope", .timeLimit(.minutes(3)))
struct OperatorScopeTests {
    static func with(_ body: (OperatorScopeStack) async throws -> Void) async throws {
        try await OperatorScopeStack.with(
            "push", migrations: PushMain.migrationsDirectory,
            services: { try PushMain.services(context: $0) }, body)
    }

    static let topic = "gifts.gift_received"

    static func send(_ app: String, id: String = RaveID.random().hex) -> PushV1.SendNotificationRequest {
        .init(
            appId: app, userIds: [RaveID.random().hex], notification: .init(title: "Hello", body: "News"),
            notificationId: id)
    }

    static func template(_ app: String, title: String) -> PushV1.SetTemplateRequest {
        .init(appId: app, template: .init(topic: topic, language: "en", title: title, body: "{sender_name}"))
    }

    /// The app's own templates' titles and its default language, as the admin certificate reads them.
    static func templates(_ stack: OperatorScopeStack, app: String) async throws -> (titles: [String], language: String)
    {
        let listed = try await PushV1.PushAdminClient(caller: stack.client).listTemplates(
            .init(appId: app), options: stack.certificate)
        return (listed.templates.map(\.title), listed.defaultLanguage)
    }

    static func notifications(_ stack: OperatorScopeStack, id: String) async throws -> Int64 {
        let rows = try await stack.service.runtime.context.pool.query(
            "SELECT count(*) FROM notifications WHERE notification_id = $1", [RaveID(wire: id)])
        return try rows.first?.decode(Int64.self, at: 0) ?? -1
    }

    @Test func anOperatorSendsAndWordsItsOwnPublishersNotifications() async throws {
        try await Self.with { stack in
            let admin = PushV1.PushAdminClient(caller: stack.client)
            let sent = try await admin.sendNotification(Self.send(stack.appA), options: stack.operatorOfA())
            let deliveries = try await admin.getDeliveries(
                .init(notificationId: sent.notificationId), options: stack.operatorOfA("viewer"))
            #expect(deliveries.deliveries.isEmpty)
            _ = try await admin.setTemplate(Self.template(stack.appA, title: "A gift"), options: stack.operatorOfA())
            _ = try await admin.setDefaultLanguage(
                .init(appId: stack.appA, language: "fr"), options: stack.operatorOfA())
            let listed = try await admin.listTemplates(.init(appId: stack.appA), options: stack.operatorOfA("viewer"))
            #expect(listed.templates.map(\.title) == ["A gift"])
            #expect(listed.defaultLanguage == "fr")
            _ = try await admin.deleteTemplate(
                .init(appId: stack.appA, topic: Self.topic, language: "en"), options: stack.operatorOfA())
            #expect(try await Self.templates(stack, app: stack.appA).titles.isEmpty)
        }
    }

    @Test func anOperatorOfAnotherPublisherIsRefusedAndNothingChanges() async throws {
        try await Self.with { stack in
            let admin = PushV1.PushAdminClient(caller: stack.client)
            let sent = try await admin.sendNotification(Self.send(stack.appA), options: stack.operatorOfA())
            _ = try await admin.setTemplate(Self.template(stack.appA, title: "A gift"), options: stack.operatorOfA())
            let refusedID = RaveID.random().hex
            let refusals = [
                await rpcFailure {
                    _ = try await admin.sendNotification(
                        Self.send(stack.appA, id: refusedID), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.getDeliveries(
                        .init(notificationId: sent.notificationId), options: stack.operatorOfB("viewer"))
                },
                await rpcFailure {
                    _ = try await admin.setTemplate(
                        Self.template(stack.appA, title: "Stolen"), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.listTemplates(.init(appId: stack.appA), options: stack.operatorOfB("viewer"))
                },
                await rpcFailure {
                    _ = try await admin.deleteTemplate(
                        .init(appId: stack.appA, topic: Self.topic, language: "en"), options: stack.operatorOfB())
                },
                await rpcFailure {
                    _ = try await admin.setDefaultLanguage(
                        .init(appId: stack.appA, language: "de"), options: stack.operatorOfB())
                },
            ]
            for refusal in refusals {
                #expect(refusal?.code == .permissionDenied)
                #expect(
                    refusal?.message
                        == "this operator acts for publisher \(stack.publisherB) only; application \(stack.appA) "
                        + "belongs to publisher \(stack.publisherA)")
            }
            let stored = try await Self.notifications(stack, id: refusedID)
            #expect(stored == 0)
            let templates = try await Self.templates(stack, app: stack.appA)
            #expect(templates.titles == ["A gift"])
            #expect(templates.language == "")
        }
    }

    @Test func anOwnerOfAllPublishersAndTheAdminCertificateReachEveryApplication() async throws {
        try await Self.with { stack in
            let admin = PushV1.PushAdminClient(caller: stack.client)
            let sent = try await admin.sendNotification(Self.send(stack.appB), options: stack.ownerOfAll)
            _ = try await admin.getDeliveries(.init(notificationId: sent.notificationId), options: stack.ownerOfAll)
            _ = try await admin.setTemplate(Self.template(stack.appA, title: "Owner"), options: stack.ownerOfAll)
            _ = try await admin.setTemplate(Self.template(stack.appB, title: "Certificate"), options: stack.certificate)
            #expect(try await Self.templates(stack, app: stack.appA).titles == ["Owner"])
            #expect(try await Self.templates(stack, app: stack.appB).titles == ["Certificate"])
        }
    }

    @Test func theServiceChecksTheRoleItselfWhateverTheGatewayLetThrough() async throws {
        try await Self.with { stack in
            let admin = PushV1.PushAdminClient(caller: stack.client)
            let id = RaveID.random().hex
            let viewer = await rpcFailure {
                _ = try await admin.sendNotification(
                    Self.send(stack.appA, id: id), options: stack.operatorOfA("viewer"))
            }
            #expect(viewer?.code == .permissionDenied)
            #expect(
                viewer?.message
                    == "rave.push.v1.PushAdmin/SendNotification needs the operator role operator or higher; this "
                    + "operator's role is viewer")
            let stored = try await Self.notifications(stack, id: id)
            #expect(stored == 0)
        }
    }
}
