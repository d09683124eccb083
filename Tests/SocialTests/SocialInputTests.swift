import RaveMessages
import RaveProtobuf
import RaveRPC
import RaveTestSupport
import Testing

@testable import Social

/// Input social must refuse: text with NULs, ids in another spelling, contact names with control characters, and
/// numbers outside the ranges the proto documents.
@Suite struct SocialInputTests {
    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let method = try #require(
                harness.player.methods.first { $0.name == "rave.social.v1.Social/AddContactByEmail" })
            let request = SocialV1.AddContactByEmailRequest(email: "bob@example.com", displayName: "Bob\u{0}Evil")
            let error = await #expect(throws: ProtoDecodingError.self) {
                _ = try await method.handler(request.protobufBytes(), alice.context)
            }
            #expect(error.map { RPCError(mapping: $0, requestID: "r").code } == .invalidArgument)
            let contacts = try await harness.player.queryContacts(.init(), context: alice.context)
            #expect(contacts.contacts.isEmpty)
        }
    }

    @Test func contactNamesRefuseControlCharactersAndOverlongText() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            for name in ["Bob\nEvil", "\u{1B}[2J", String(repeating: "é", count: 129)] {
                let code = await statusCode {
                    _ = try await harness.player.addContactByEmail(
                        .init(email: "bob@example.com", displayName: name), context: alice.context)
                }
                #expect(code == .invalidArgument, "\(name.debugDescription)")
            }
            let synced = await statusCode {
                _ = try await harness.player.syncContacts(
                    .init(
                        source: .phonebook,
                        contacts: [.init(externalId: "+33100000000", displayName: "Tab\there")]),
                    context: alice.context)
            }
            #expect(synced == .invalidArgument)
            let added = try await harness.player.addContactByEmail(
                .init(email: "bob@example.com", displayName: "Bob 👋"), context: alice.context)
            #expect(added.contact?.displayName == "Bob 👋")
        }
    }

    @Test func idsInAnotherSpellingAreRefused() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            for spelling in [bob.id.uppercased(), "{\(bob.id)}"] {
                let code = await statusCode {
                    _ = try await harness.player.sendFriendRequest(
                        .init(listKey: "friends", target: .init(key: .userId(spelling))), context: alice.context)
                }
                #expect(code == .invalidArgument, "\(spelling)")
            }
            let blocked = await statusCode {
                _ = try await harness.player.blockUser(
                    .init(target: .init(key: .userId(bob.id.uppercased()))), context: alice.context)
            }
            #expect(blocked == .invalidArgument)
            let unblocked = await statusCode {
                _ = try await harness.player.unblockUser(.init(userId: bob.id.uppercased()), context: alice.context)
            }
            #expect(unblocked == .invalidArgument)
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }
}
