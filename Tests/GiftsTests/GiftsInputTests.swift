import RaveMessages
import RavePostgres
import RaveProtobuf
import RaveRPC
import RaveTestSupport
import Testing

@testable import Gifts

/// Input gifts must refuse: text with NULs, ids in another spelling (identity refuses them too), and numbers
/// outside the ranges the proto documents.
@Suite struct GiftsInputTests {
    @Test func anUpperCaseRecipientIsRefusedAsIdentityRefusesIt() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser(named: "Alice")
            let friend = harness.identity.addUser()
            do {
                _ = try await harness.player.sendGifts(
                    .init(giftTypeKey: "life", recipientIds: [friend.hex.uppercased()], idempotencyKey: "k1"),
                    context: harness.context(sender))
                Issue.record("an upper-case recipient was accepted")
            } catch let error as GiftsError {
                #expect(error.code == .invalidArgument)
                #expect(
                    error.message
                        == "recipient_ids[0] must be 32 lowercase hex digits, got \"\(friend.hex.uppercased())\"")
            }
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 0)
        }
    }

    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser(named: "Alice")
            let friend = harness.identity.addUser()
            let method = try #require(harness.player.methods.first { $0.name == "rave.gifts.v1.Gifts/SendGifts" })
            for request in [
                GiftsV1.SendGiftsRequest(giftTypeKey: "life\u{0}x", recipientIds: [friend.hex], idempotencyKey: "k2"),
                GiftsV1.SendGiftsRequest(giftTypeKey: "life", recipientIds: [friend.hex], idempotencyKey: "k\u{0}"),
                GiftsV1.SendGiftsRequest(
                    giftTypeKey: "life", recipientIds: [friend.hex + "\u{0}"], idempotencyKey: "k3"),
            ] {
                let error = await #expect(throws: ProtoDecodingError.self) {
                    _ = try await method.handler(request.protobufBytes(), harness.context(sender))
                }
                #expect(error.map { RPCError(mapping: $0, requestID: "r").code } == .invalidArgument)
            }
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 0)
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }
}
