import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import Testing

@testable import Push

@Suite("Notifications from other services' events")
struct EventNotificationTests {
    @Test func placeholdersAreReplacedAndUnknownOnesKept() {
        let text = EventTemplates.render(
            "{sender_name} sent {gift_name} {unknown} {", ["sender_name": "Alice", "gift_name": "an egg"])
        #expect(text == "Alice sent an egg {unknown} {")
    }

    @Test func aDeviceLanguageFallsBackToItsPrimaryLanguageThenTheAppDefault() {
        let templates = [
            "fr": PushV1.Template(language: "fr", title: "fr"),
            "pt-BR": PushV1.Template(language: "pt-BR", title: "br"),
            "de": PushV1.Template(language: "de", title: "de"),
        ]
        func chosen(_ language: String, default defaultLanguage: String = "de") -> String? {
            EventTemplates.choose(language: language, appTemplates: templates, defaultLanguage: defaultLanguage)?
                .title
        }
        #expect(chosen("pt-BR") == "br")
        #expect(chosen("fr-CA") == "fr")
        #expect(chosen("pt") == "de")
        #expect(chosen("ja") == "de")
        #expect(chosen("ja", default: "") == nil)
    }

    @Test func aGiftEventBecomesExactlyOneNotificationForTheRecipient() async throws {
        try await PushFixture.with { fixture in
            let recipient = RaveID.random()
            try await fixture.register(recipient, token: "phone")
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            let event = Self.giftReceived(to: recipient, from: "Alice")
            let first = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            let again = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            #expect(first.handled == 1)
            #expect(again.handled == 0)

            let deliveries = try await fixture.deliveries(event.eventId)
            #expect(deliveries.map(\.state) == [.pending])
            let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(recipient))
            #expect(inbox.entries.map(\.notificationId) == [event.eventId])
            #expect(inbox.entries.first?.title == "You received a gift")
            #expect(inbox.entries.first?.body == "Alice sent you Golden Egg.")
            #expect(inbox.entries.first?.data.contains(PushV1.DataEntry(key: "gift_id", value: "g1")) == true)
            let notifications = try await fixture.pool.query("SELECT count(*) FROM notifications")
            #expect(try notifications[0].decode(Int64.self, at: 0) == 1)
        }
    }

    @Test func everyConsumedTopicHasABuiltInText() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            let events = [
                Self.event(
                    "gifts.request_received",
                    GiftsV1.GiftRequestReceivedEvent(
                        requestId: "r1", appId: PushFixture.appID, recipientId: user.hex, requesterDisplayName: "Bob",
                        giftTypeKey: "egg"
                    ).protobufBytes()),
                Self.event(
                    "social.friend_request_received",
                    SocialV1.FriendRequestReceivedEvent(
                        appId: PushFixture.appID, recipientId: user.hex, senderDisplayName: ""
                    ).protobufBytes()),
                Self.event(
                    "leaderboards.achievement_unlocked",
                    LeaderboardsV1.AchievementUnlockedEvent(
                        userId: user.hex, appId: PushFixture.appID, achievementKey: "k", achievementName: "First Blood"
                    ).protobufBytes()),
            ]
            let response = try await sink.deliverEvents(.init(events: events), context: PushFixture.serviceContext())
            #expect(response.handled == 3)
            let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(user))
            #expect(
                Set(inbox.entries.map(\.body)) == [
                    "Bob asks you for egg.", "Someone wants to be your friend.", "You unlocked First Blood.",
                ])
        }
    }

    @Test func consentRulesApplyToEventNotifications() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.register(user, token: "muted", consent: PushV1.Consent())
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            let event = Self.giftReceived(to: user, from: "Alice")
            _ = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            let deliveries = try await fixture.deliveries(event.eventId)
            #expect(deliveries.map(\.state) == [.skipped])
        }
    }

    /// App templates in French and Portuguese with German as the default: each device gets its own language's
    /// text, a device of another language the default's, and the inbox the default's.
    @Test func eachDeviceGetsTheTemplateOfItsLanguage() async throws {
        try await PushFixture.with { fixture in
            let admin = fixture.admin
            for (language, title) in [("fr", "Un cadeau"), ("pt", "Um presente"), ("de", "Ein Geschenk")] {
                _ = try await admin.setTemplate(
                    .init(
                        appId: PushFixture.appID,
                        template: .init(
                            topic: "gifts.gift_received", language: language, title: title, body: "{sender_name}")),
                    context: PushFixture.adminContext())
            }
            _ = try await admin.setDefaultLanguage(
                .init(appId: PushFixture.appID, language: "de"), context: PushFixture.adminContext())
            let user = RaveID.random()
            for (token, language) in [("fr-device", "fr-CA"), ("pt-device", "pt-BR"), ("ja-device", "ja")] {
                _ = try await fixture.service.registerToken(
                    PushV1.RegisterTokenRequest(
                        platform: .fcm, token: token, consent: PushV1.Consent(push: true), language: language,
                        timeZone: "UTC"),
                    context: PushFixture.playerContext(user))
            }
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            _ = try await sink.deliverEvents(
                .init(events: [Self.giftReceived(to: user, from: "Alice")]), context: PushFixture.serviceContext())

            let now = fixture.clock.now()
            let claimed = try await DeliveryStore().claim(
                now: now, leaseEnd: now.addingTimeInterval(60), limit: 10, on: fixture.pool)
            let titles = Dictionary(uniqueKeysWithValues: claimed.map { ($0.push.token, $0.push.notification.title) })
            #expect(titles == ["fr-device": "Un cadeau", "pt-device": "Um presente", "ja-device": "Ein Geschenk"])
            #expect(claimed.allSatisfy { $0.push.notification.body == "Alice" })
            let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(user))
            #expect(inbox.entries.map(\.title) == ["Ein Geschenk"])
        }
    }

    @Test func templatesAreSetListedAndDeleted() async throws {
        try await PushFixture.with { fixture in
            let admin = fixture.admin
            let context = PushFixture.adminContext()
            let template = PushV1.Template(
                topic: "leaderboards.achievement_unlocked", language: "en", title: "GG", body: "{achievement_name}!")
            _ = try await admin.setTemplate(.init(appId: PushFixture.appID, template: template), context: context)
            var replaced = template
            replaced.title = "Well played"
            _ = try await admin.setTemplate(.init(appId: PushFixture.appID, template: replaced), context: context)
            _ = try await admin.setDefaultLanguage(.init(appId: PushFixture.appID, language: "en"), context: context)
            let listed = try await admin.listTemplates(
                .init(appId: PushFixture.appID, topic: "leaderboards.achievement_unlocked"), context: context)
            #expect(listed.templates == [replaced])
            #expect(listed.defaultLanguage == "en")
            #expect(listed.builtIn.map(\.topic) == ["leaderboards.achievement_unlocked"])
            let everything = try await admin.listTemplates(.init(appId: PushFixture.appID), context: context)
            #expect(everything.builtIn.count == 4)

            _ = try await admin.deleteTemplate(
                .init(appId: PushFixture.appID, topic: template.topic, language: "en"), context: context)
            #expect(try await admin.listTemplates(.init(appId: PushFixture.appID), context: context).templates.isEmpty)
            await expectStatus(.notFound) {
                try await admin.deleteTemplate(
                    .init(appId: PushFixture.appID, topic: template.topic, language: "en"), context: context)
            }
        }
    }

    @Test func badTemplatesAreRefused() async throws {
        try await PushFixture.with { fixture in
            let admin = fixture.admin
            let context = PushFixture.adminContext()
            func set(_ template: PushV1.Template, app: String = PushFixture.appID) async throws {
                _ = try await admin.setTemplate(.init(appId: app, template: template), context: context)
            }
            let good = PushV1.Template(topic: "gifts.gift_received", language: "en", title: "t", body: "b")
            var unknownTopic = good
            unknownTopic.topic = "gifts.gift_accepted"
            var badLanguage = good
            badLanguage.language = "english"
            var noLanguage = good
            noLanguage.language = ""
            var empty = good
            empty.title = ""
            empty.body = ""
            var long = good
            long.body = String(repeating: "x", count: 1025)
            for template in [unknownTopic, badLanguage, noLanguage, empty, long] {
                await expectStatus(.invalidArgument) { try await set(template) }
            }
            await expectStatus(.invalidArgument) { try await set(good, app: "") }
            await expectStatus(.invalidArgument) {
                try await admin.setDefaultLanguage(
                    .init(appId: PushFixture.appID, language: "xx-yy-zz"), context: context)
            }
            await expectStatus(.permissionDenied) {
                try await admin.setTemplate(
                    .init(appId: PushFixture.appID, template: good), context: PushFixture.playerContext(.random()))
            }
        }
    }

    @Test func otherTopicsAndPlayersAreNotConsumed() async throws {
        try await PushFixture.with { fixture in
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            let accepted = Self.event("gifts.gift_accepted", GiftsV1.GiftAcceptedEvent(giftId: "g").protobufBytes())
            let response = try await sink.deliverEvents(
                .init(events: [accepted]), context: PushFixture.serviceContext())
            #expect(response.handled == 0)
            let marks = try await fixture.pool.query("SELECT count(*) FROM processed_events")
            #expect(try marks[0].decode(Int64.self, at: 0) == 0)
        }
    }

    /// A payload that can never become a notification must not block the events after it.
    @Test func anUndecodableEventIsDroppedAndCountedAsHandled() async throws {
        try await PushFixture.with { fixture in
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: Self.quiet)
            let garbage = Self.event("gifts.gift_received", [0xFF, 0xFF, 0xFF])
            let badRecipient = Self.event(
                "gifts.gift_received", GiftsV1.GiftReceivedEvent(appId: "a", recipientId: "nobody").protobufBytes())
            let response = try await sink.deliverEvents(
                .init(events: [garbage, badRecipient]), context: PushFixture.serviceContext())
            #expect(response.handled == 2)
            let notifications = try await fixture.pool.query("SELECT count(*) FROM notifications")
            #expect(try notifications[0].decode(Int64.self, at: 0) == 0)
        }
    }

    static let quiet = Logger(label: "push-events-test", level: .critical)

    static func giftReceived(to user: RaveID, from sender: String) -> EventsV1.Event {
        event(
            "gifts.gift_received",
            GiftsV1.GiftReceivedEvent(
                giftId: "g1", appId: PushFixture.appID, recipientId: user.hex, senderId: RaveID.random().hex,
                senderDisplayName: sender, giftTypeKey: "egg", giftTypeName: "Golden Egg"
            ).protobufBytes())
    }

    static func event(_ topic: String, _ payload: [UInt8]) -> EventsV1.Event {
        EventsV1.Event(eventId: RaveID.random().hex, topic: topic, key: "k", payload: payload, source: "tests")
    }
}
