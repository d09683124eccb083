import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Gifts operator reads")
struct AdminReadsTests {
    @Test("ListUserGifts pages the gifts a player sent and received, in every state, newest first")
    func listUserGiftsPagesSentAndReceivedInEveryState() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let alice = harness.identity.addUser(named: "Alice")
            let bob = harness.identity.addUser(named: "Bob")
            let carol = harness.identity.addUser(named: "Carol")
            _ = try await harness.send(from: alice, to: [bob])
            _ = try await harness.send(from: carol, to: [alice])
            _ = try await harness.send(from: bob, to: [carol])
            let received = try await harness.onlyPendingGift(of: alice)
            _ = try await harness.player.acceptGift(.init(giftId: received.giftId), context: harness.context(alice))

            let first = try await harness.admin.listUserGifts(
                .init(appId: harness.app.hex, userId: alice.hex, pageSize: 1), context: harness.adminContext)
            #expect(first.gifts.count == 1 && !first.nextPageToken.isEmpty)
            let second = try await harness.admin.listUserGifts(
                .init(appId: harness.app.hex, userId: alice.hex, pageSize: 1, pageToken: first.nextPageToken),
                context: harness.adminContext)
            let all = first.gifts + second.gifts
            #expect(Set(all.map(\.giftId)).count == 2)
            #expect(all.first?.senderId == carol.hex && all.first?.state == .accepted)
            #expect(all.last?.recipientId == bob.hex && all.last?.state == .pending)
            let last = try await harness.admin.listUserGifts(
                .init(appId: harness.app.hex, userId: alice.hex, pageSize: 1, pageToken: second.nextPageToken),
                context: harness.adminContext)
            #expect(last.gifts.isEmpty && last.nextPageToken.isEmpty)
            let otherApp = try await harness.admin.listUserGifts(
                .init(appId: RaveID.random().hex, userId: alice.hex), context: harness.adminContext)
            #expect(otherApp.gifts.isEmpty)
        }
    }

    @Test("ListUserGifts refuses bad ids, page sizes and tokens in our words, and players")
    func listUserGiftsRefusesBadInput() async throws {
        try await GiftsHarness.with { harness in
            let alice = harness.identity.addUser()
            let app = harness.app.hex
            let cases: [(GiftsV1.ListUserGiftsRequest, String)] = [
                (.init(appId: app, userId: "x"), "user_id must be 32 lowercase hex digits, got \"x\""),
                (.init(appId: app, userId: alice.hex, pageSize: 101), "page_size must be 1…100 (0 means 25), got 101"),
                (
                    .init(appId: app, userId: alice.hex, pageToken: "nonsense"),
                    "page_token is not a token this service returned; start again with an empty one"
                ),
            ]
            for (request, message) in cases {
                do {
                    _ = try await harness.admin.listUserGifts(request, context: harness.adminContext)
                    Issue.record("\(request) was accepted")
                } catch {
                    let status = RPCError(mapping: error, requestID: "test")
                    #expect(status.code == .invalidArgument && status.message == message)
                }
            }
            do {
                _ = try await harness.admin.listUserGifts(
                    .init(appId: app, userId: alice.hex), context: harness.context(alice))
                Issue.record("a player listed another's gifts")
            } catch {
                #expect(hasStatus(error, .permissionDenied))
            }
        }
    }
}
