import Foundation
import RaveMessages
import RavePostgres
import RaveProtobuf
import RaveRPC
import RaveTestSupport
import Testing

@testable import Push

/// Input push must refuse: text with NULs, ids in another spelling, and numbers outside the ranges the proto
/// documents.
@Suite struct PushInputTests {
    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let method = try #require(fixture.service.methods.first { $0.name == "rave.push.v1.Push/RegisterToken" })
            // protobuf-c would have cut the token at the NUL and stored "abc" as the device's token.
            let request = PushV1.RegisterTokenRequest(
                platform: .fcm, token: "abc\u{0}def", consent: .init(push: true), country: "KR", language: "ko",
                timeZone: "UTC")
            let error = await #expect(throws: ProtoDecodingError.self) {
                _ = try await method.handler(request.protobufBytes(), PushFixture.playerContext(user))
            }
            #expect(error.map { RPCError(mapping: $0, requestID: "r").code } == .invalidArgument)
            let tokens = try await fixture.pool.query("SELECT count(*) FROM device_tokens")
            #expect(try tokens[0].decode(Int64.self, at: 0) == 0)
        }
    }

    @Test func inboxOffsetsAndPageSizesFollowTheirRanges() async throws {
        try await PushFixture.with { fixture in
            let context = PushFixture.playerContext(.random())
            _ = try await fixture.service.listInbox(.init(pageSize: 0, offset: 100_000), context: context)
            for request in [
                PushV1.ListInboxRequest(pageSize: 101), PushV1.ListInboxRequest(pageSize: -1),
                PushV1.ListInboxRequest(offset: -1), PushV1.ListInboxRequest(offset: 100_001),
            ] {
                await expectStatus(.invalidArgument) { try await fixture.service.listInbox(request, context: context) }
            }
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }
}
