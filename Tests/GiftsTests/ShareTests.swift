import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Share with gift and install links")
struct ShareTests {
    static func invitation(_ subject: String, request: String) -> GiftsV1.ExternalInvitation {
        GiftsV1.ExternalInvitation(provider: .facebook, externalUserId: subject, requestId: request)
    }

    static func linkEvent(user: RaveID, subject: String, app: RaveID) -> EventsV1.Event {
        let payload = IdentityV1.ProviderLinkedEvent(
            userId: user.hex, appId: app.hex, provider: .facebook, subject: subject, linkedAtUnixMs: 1)
        return EventsV1.Event(
            eventId: RaveID.random().hex, topic: EventTopic.providerLinked, key: user.hex,
            payload: payload.protobufBytes(), occurredAtUnixMs: 1, source: "identity")
    }

    @Test("an invited non-player installs, finds the gift key, joins, connects Facebook and finds the gift")
    func fullShareWithGiftStory() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser(named: "Alice")
            let existing = harness.identity.addUser()
            harness.identity.link(ExternalSubject(provider: 3, subject: "fb-existing"), to: existing)
            let attached = try await harness.player.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [
                        Self.invitation("fb-newcomer", request: "req-1"),
                        Self.invitation("fb-existing", request: "req-1"),
                        Self.invitation("fb-newcomer", request: "req-1"),
                    ]),
                context: harness.context(sender))
            #expect(attached.results.map(\.status) == [.pending, .sent, .duplicate])
            #expect(try await harness.onlyPendingGift(of: existing).giftId == attached.results[1].giftId)

            // The newcomer installs from the invitation: no account yet, only the request id.
            let fetched = try await harness.install.fetchExternalGift(
                .init(appId: harness.app.hex, requestId: "req-1", provider: .facebook),
                context: harness.anonymousContext)
            #expect(fetched.giftTypeKey == "life" && fetched.senderId == sender.hex)

            // They join, then connect Facebook: identity publishes the link and delivers it to gifts' sink.
            let newcomer = harness.identity.addUser()
            let event = Self.linkEvent(user: newcomer, subject: "fb-newcomer", app: harness.app)
            let sink = harness.dependencies.providerLinkSink
            let first = try await sink.deliverEvents(.init(events: [event]), context: harness.serviceContext)
            let again = try await sink.deliverEvents(.init(events: [event]), context: harness.serviceContext)
            let later = try await sink.deliverEvents(
                .init(events: [Self.linkEvent(user: newcomer, subject: "fb-newcomer", app: harness.app)]),
                context: harness.serviceContext)
            #expect(first.handled == 1 && again.handled == 0 && later.handled == 1)
            let gift = try await harness.onlyPendingGift(of: newcomer)
            #expect(gift.senderId == sender.hex && gift.giftTypeKey == "life")
            let sent = try await harness.sentEvents()
            #expect(sent.map(\.key) == [sender.hex, sender.hex])
            #expect(sent.map { $0.event.gifts.map(\.recipientId) } == [[existing.hex], [newcomer.hex]])
            #expect(sent[1].event.gifts.map(\.giftId) == [gift.giftId] && sent[1].event.senderDisplayName == "Alice")
            // Delivered: nothing is pending for the request any more.
            await #expect {
                _ = try await harness.install.fetchExternalGift(
                    .init(appId: harness.app.hex, requestId: "req-1"), context: harness.anonymousContext)
            } throws: { hasStatus($0, .notFound) }
        }
    }

    @Test("a detached external gift never becomes a gift")
    func detachReleasesTheGift() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            _ = try await harness.player.attachGiftToInvitations(
                .init(giftTypeKey: "life", invitations: [Self.invitation("fb-x", request: "req-9")]),
                context: harness.context(sender))
            let newcomer = harness.identity.addUser()
            let detached = try await harness.player.detachExternalGift(
                .init(requestId: "req-9"), context: harness.context(newcomer))
            #expect(detached.giftTypeKey == "life" && detached.detached == 1)
            await #expect {
                _ = try await harness.player.detachExternalGift(
                    .init(requestId: "req-9"), context: harness.context(newcomer))
            } throws: { hasStatus($0, .notFound) }
            _ = try await harness.dependencies.providerLinkSink.deliverEvents(
                .init(events: [Self.linkEvent(user: newcomer, subject: "fb-x", app: harness.app)]),
                context: harness.serviceContext)
            #expect(try await harness.player.listGifts(.init(), context: harness.context(newcomer)).gifts.isEmpty)
        }
    }

    @Test("re-attaching an invitation is DUPLICATE and does not count against the daily limit again")
    func reattachingDoesNotCountTwice() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType(dailyLimit: 2)
            let sender = harness.identity.addUser()
            let first = Self.invitation("fb-a", request: "req-1")
            var sequential: [GiftsV1.InvitationStatus] = []
            for _ in 0..<3 {
                let attached = try await harness.player.attachGiftToInvitations(
                    .init(giftTypeKey: "life", invitations: [first]), context: harness.context(sender))
                sequential += attached.results.map(\.status)
            }
            #expect(sequential == [.pending, .duplicate, .duplicate])
            // Concurrent re-attaches of one invitation count it once as well.
            let second = Self.invitation("fb-b", request: "req-1")
            let statuses = try await withThrowingTaskGroup(of: GiftsV1.InvitationStatus.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await harness.player.attachGiftToInvitations(
                            .init(giftTypeKey: "life", invitations: [second]), context: harness.context(sender)
                        ).results[0].status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .pending }.count == 1)
            #expect(statuses.filter { $0 == .duplicate }.count == 5)
            // Two invitations counted: the limit of 2 is reached by them and nothing else.
            let third = try await harness.player.attachGiftToInvitations(
                .init(giftTypeKey: "life", invitations: [Self.invitation("fb-c", request: "req-1")]),
                context: harness.context(sender))
            #expect(third.results.map(\.status) == [.dailyLimit])
            #expect(try await harness.count("SELECT sum(sent)::int8 FROM daily_sends") == 2)
            #expect(try await harness.count("SELECT count(*) FROM external_gifts") == 2)
        }
    }

    @Test("attaching checks the invitation list and the provider")
    func attachValidatesInput() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            await #expect {
                _ = try await harness.player.attachGiftToInvitations(
                    .init(giftTypeKey: "life", invitations: []), context: harness.context(sender))
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.player.attachGiftToInvitations(
                    .init(
                        giftTypeKey: "life",
                        invitations: [.init(provider: .unspecified, externalUserId: "x", requestId: "r")]),
                    context: harness.context(sender))
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.player.attachGiftToInvitations(
                    .init(giftTypeKey: "nope", invitations: [Self.invitation("x", request: "r")]),
                    context: harness.context(sender))
            } throws: { hasStatus($0, .notFound) }
        }
    }

    @Test("install links count clicks; a malformed code is INVALID_ARGUMENT, an unknown one NOT_FOUND")
    func installLinks() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let created = try await harness.player.createInstallLink(
                .init(giftTypeKey: "life", requestId: "req-5", channel: "email"), context: harness.context(sender))
            #expect(created.code.utf8.count == 16)
            let once = try await harness.install.resolveInstallLink(
                .init(code: created.code), context: harness.anonymousContext)
            let twice = try await harness.install.resolveInstallLink(
                .init(code: created.code), context: harness.anonymousContext)
            #expect(once.giftTypeKey == "life" && once.requestId == "req-5" && once.channel == "email")
            #expect(once.appId == harness.app.hex && once.clicks == 1 && twice.clicks == 2)
            await #expect {
                _ = try await harness.install.resolveInstallLink(
                    .init(code: "short"), context: harness.anonymousContext)
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.install.resolveInstallLink(
                    .init(code: "abc$efghijklmnop"), context: harness.anonymousContext)
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.install.resolveInstallLink(
                    .init(code: InstallCode.random()), context: harness.anonymousContext)
            } throws: { hasStatus($0, .notFound) }
        }
    }

    @Test("install codes carry 96 random bits")
    func installCodesAreRandom() throws {
        let codes = Set((0..<1_000).map { _ in InstallCode.random() })
        #expect(codes.count == 1_000)
        for code in codes.prefix(10) { #expect(try InstallCode.validate(code) == code) }
    }
}
