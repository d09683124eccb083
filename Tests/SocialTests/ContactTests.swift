import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Contacts")
struct ContactTests {
    @Test func addByUsernameAndEmailThenDelete() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer(
                "Carol", email: "carol-\(UInt32.random(in: 0...UInt32.max))@example.test")
            let bobName = try await harness.username(of: bob)
            let added = try await harness.player.addContactsByUsername(
                .init(usernames: [bobName, "nobody-has-this-name"]), context: alice.context)
            #expect(added.results.map { $0.contact?.userId ?? "" } == [bob.id, ""])
            #expect(added.results.first?.contact?.sources == [.rave])

            let carolEmail = try await harness.email(of: carol)
            let matched = try await harness.player.addContactByEmail(
                .init(email: carolEmail.uppercased(), displayName: "Carol from the phone"), context: alice.context)
            #expect(matched.contact?.userId == carol.id)
            #expect(matched.contact?.key == "rave:\(carol.id)")
            let unmatched = try await harness.player.addContactByEmail(
                .init(email: "stranger@example.test", displayName: "Stranger"), context: alice.context)
            #expect(unmatched.contact?.userId == "" && unmatched.contact?.key == "phonebook:stranger@example.test")

            let all = try await harness.player.queryContacts(.init(), context: alice.context)
            #expect(all.contacts.map(\.displayName) == ["Bob", "Carol", "Stranger"])
            #expect(all.totalCount == 3)
            _ = try await harness.player.deleteContact(.init(key: bob.id), context: alice.context)
            _ = try await harness.player.deleteContact(
                .init(key: "phonebook:stranger@example.test"), context: alice.context)
            let left = try await harness.player.queryContacts(.init(), context: alice.context)
            #expect(left.contacts.map(\.userId) == [carol.id])
            let deleteAgain = await statusCode {
                _ = try await harness.player.deleteContact(.init(key: bob.id), context: alice.context)
            }
            #expect(deleteAgain == .notFound)
            let tooMany = await statusCode {
                _ = try await harness.player.addContactsByUsername(
                    .init(usernames: Array(repeating: "x", count: 101)), context: alice.context)
            }
            #expect(tooMany == .invalidArgument)
        }
    }

    @Test func syncReplacesTheSourcesPreviousContactsAndFiltersByApplication() async throws {
        try await SocialHarness.with { harness in
            let otherApp = try await harness.makeApplication()
            let alice = try await harness.makePlayer("Alice")
            let inApp = try await harness.makePlayer(
                "Player", email: "player-\(UInt32.random(in: 0...UInt32.max))@example.test")
            let elsewhere = try await harness.makePlayer(
                "Elsewhere", email: "elsewhere-\(UInt32.random(in: 0...UInt32.max))@example.test", appID: otherApp)
            let inAppEmail = try await harness.email(of: inApp)
            let elsewhereEmail = try await harness.email(of: elsewhere)

            let first = try await harness.player.syncContacts(
                .init(
                    source: .phonebook,
                    contacts: [
                        .init(externalId: inAppEmail, displayName: "P"), .init(externalId: elsewhereEmail),
                        .init(externalId: "+15550100", displayName: "Phone only"),
                    ]), context: alice.context)
            #expect(first.stored == 3 && first.matched == 2)
            _ = try await harness.player.syncContacts(
                .init(source: .facebook, contacts: [.init(externalId: "fb-1", displayName: "Facebook friend")]),
                context: alice.context)

            let using = try await harness.player.queryContacts(.init(filter: .usingApplication), context: alice.context)
            #expect(using.contacts.map(\.userId) == [inApp.id])
            let notUsing = try await harness.player.queryContacts(
                .init(filter: .notUsingApplication), context: alice.context)
            #expect(
                Set(notUsing.contacts.map(\.key)) == ["rave:\(elsewhere.id)", "phonebook:+15550100", "facebook:fb-1"])

            // A new phonebook sync replaces the previous one and leaves Facebook's contacts alone.
            let second = try await harness.player.syncContacts(
                .init(source: .phonebook, contacts: [.init(externalId: inAppEmail)]), context: alice.context)
            #expect(second.stored == 1)
            let all = try await harness.player.queryContacts(.init(), context: alice.context)
            #expect(Set(all.contacts.map(\.key)) == ["rave:\(inApp.id)", "facebook:fb-1"])

            let fetched = try await harness.player.fetchExternalContacts(
                .init(
                    source: .phonebook,
                    contacts: [.init(externalId: elsewhereEmail), .init(externalId: "nobody@x.test")],
                    filter: .notUsingApplication), context: alice.context)
            #expect(Set(fetched.contacts.map(\.key)) == ["rave:\(elsewhere.id)", "phonebook:nobody@x.test"])
            let afterFetch = try await harness.player.queryContacts(.init(), context: alice.context)
            #expect(afterFetch.totalCount == 2)

            let badSource = await statusCode {
                _ = try await harness.player.syncContacts(.init(source: .rave), context: alice.context)
            }
            #expect(badSource == .invalidArgument)
            let missingThirdParty = await statusCode {
                _ = try await harness.player.syncContacts(.init(source: .thirdParty), context: alice.context)
            }
            #expect(missingThirdParty == .invalidArgument)
            let thirdParty = try await harness.player.syncContacts(
                .init(source: .thirdParty, thirdPartySource: "Discord", contacts: [.init(externalId: "d-1")]),
                context: alice.context)
            #expect(thirdParty.stored == 1)
            let withThirdParty = try await harness.player.queryContacts(.init(), context: alice.context)
            let discord = withThirdParty.contacts.first { $0.key == "third_party:Discord:d-1" }
            #expect(discord?.sources == [.thirdParty] && discord?.thirdPartySource == "Discord")
        }
    }
}
