import RaveMessages
import RaveProtobuf
import RaveRPC
import RaveRuntime
import RaveTestSupport
import Testing

@testable import Identity

/// Profile input as a client can send it: dates, display names, text with NULs, ids in other spellings, limits.
@Suite struct ProfileInputTests {
    @Test func validBirthDateIsStoredWhateverThePreparedStatementSawFirst() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            // Updates without a birth date first: every pooled connection prepares the statement with NULL there.
            for index in 0..<8 {
                _ = try await harness.player.updateCurrentUser(
                    .init(displayName: .init(value: "Name \(index)")), context: context)
            }
            for _ in 0..<3 {
                let updated = try await harness.player.updateCurrentUser(
                    .init(birthDate: .init(value: "2000-01-15")), context: context)
                #expect(updated.user?.birthDate == "2000-01-15")
            }
            let read = try await harness.player.getCurrentUser(.init(), context: context)
            #expect(read.user?.birthDate == "2000-01-15")
            let cleared = try await harness.player.updateCurrentUser(
                .init(birthDate: .init(value: "")), context: context)
            #expect(cleared.user?.birthDate == "")
        }
    }

    @Test(arguments: [
        "2000-13-01", "2000-00-10", "2001-02-29", "2000-04-31", "1899-12-31", "2999-01-01", "2000-1-15", "15.01.2000",
        "2000-01-15T00:00:00Z", "",
    ])
    func impossibleBirthDatesAreRefusedBeforeTheDatabase(_ text: String) async throws {
        guard !text.isEmpty else { return }  // empty clears; covered above
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let refused = await statusCode {
                _ = try await harness.player.updateCurrentUser(
                    .init(birthDate: .init(value: text)),
                    context: IdentityHarness.playerContext(login, appID: app.appId))
            }
            #expect(refused?.code == .invalidArgument)
            #expect(refused?.message.hasPrefix("birth_date must be") == true)
        }
    }

    @Test func displayNamesAreLimitedInCharactersAndBytesAndRefuseControls() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            func status(_ name: String) async -> (code: StatusCode, message: String)? {
                await statusCode {
                    _ = try await harness.player.updateCurrentUser(
                        .init(displayName: .init(value: name)), context: context)
                }
            }
            // 64 characters, each followed by 200 combining marks: 25,664 bytes.
            let heavy = String(repeating: "e" + String(repeating: "\u{301}", count: 200), count: 64)
            let tooHeavy = await status(heavy)
            #expect(tooHeavy?.code == .invalidArgument)
            #expect(
                tooHeavy?.message == "display_name must be at most 256 bytes of UTF-8, got 25664 (in 64 characters)")
            #expect(
                await status(String(repeating: "x", count: 65))?.message
                    == "display_name must be 1…64 characters, got 65")
            for control in ["Bob\nEvil", "Bob\u{1B}[31mRed", "Tab\there", "\u{202E}evil", "del\u{7F}", "c1\u{85}"] {
                let refused = await status(control)
                #expect(refused?.code == .invalidArgument, "\(control.debugDescription)")
                #expect(refused?.message.contains("control characters") == true)
            }
            // Within both limits, whatever the code points: 64 decomposed letters (128 code points, 192 bytes),
            // and emoji made of several code points.
            let decomposed = String(repeating: "e\u{301}", count: 64)
            let stored = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: decomposed)), context: context)
            #expect(stored.user?.profile?.displayName == decomposed)
            let family = String(repeating: "👩‍👩‍👧", count: 10)
            let emoji = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: family)), context: context)
            #expect(emoji.user?.profile?.displayName == family)
        }
    }

    @Test func textWithANULIsRefusedWholeAtDecoding() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            _ = try await harness.player.updateCurrentUser(
                .init(username: .init(value: "bob_1"), displayName: .init(value: "Bob")), context: context)
            let method = try #require(
                harness.player.methods.first { $0.name == "rave.identity.v1.Identity/UpdateCurrentUser" })
            for request in [
                IdentityV1.UpdateCurrentUserRequest(displayName: .init(value: "Bob\u{0}Evil")),
                IdentityV1.UpdateCurrentUserRequest(username: .init(value: "\u{0}abc")),
            ] {
                let error = await #expect(throws: ProtoDecodingError.self) {
                    _ = try await method.handler(request.protobufBytes(), context)
                }
                let status = error.map { RPCError(mapping: $0, requestID: "r") }
                #expect(status?.code == .invalidArgument)
                #expect(status?.message.contains("holds a NUL character") == true)
            }
            let user = try await harness.player.getCurrentUser(.init(), context: context).user?.profile
            #expect(user?.displayName == "Bob")
            #expect(user?.username == "bob_1")
        }
    }

    @Test func idsInAnotherSpellingAreRefused() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            let dashed = login.userID.enumerated().map {
                [8, 12, 16, 20].contains($0.offset) ? "-\($0.element)" : "\($0.element)"
            }
            .joined()
            for spelling in [login.userID.uppercased(), dashed, "{\(login.userID)}"] {
                let refused = await statusCode {
                    _ = try await harness.player.findUser(.init(key: .userId(spelling)), context: context)
                }
                #expect(refused?.code == .invalidArgument, "\(spelling)")
                #expect(refused?.message.contains("must be 32 lowercase hex digits") == true)
            }
        }
    }

    @Test func declaredRangesAreTheProtoComments() throws {
        #expect(try ProtoComments.disagreements(with: RequestLimits.declaredRanges) == [])
    }

    @Test(arguments: [(UInt32(0), false), (1, true), (50, true), (51, false)])
    func randomUsersLimitFollowsTheProto(limit: UInt32, accepted: Bool) async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let outcome = await statusCode {
                _ = try await harness.player.getRandomUsers(
                    .init(limit: limit), context: IdentityHarness.playerContext(login, appID: app.appId))
            }
            if accepted {
                #expect(outcome == nil)
            } else {
                #expect(outcome?.code == .invalidArgument)
                #expect(outcome?.message == "limit must be 1…50, got \(limit)")
            }
        }
    }
}
