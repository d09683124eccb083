import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

/// Applications' allowed web origins (docs/identity.md, "Allowed origins"): the strict form of an origin, setting
/// them with CreateApplication and UpdateApplication, and the union the gateway reads.
@Suite("Allowed origins")
struct AllowedOriginsTests {
    typealias Harness = IdentityHarness

    static let notASCII =
        "holds a space, a control character or a character outside ASCII (write a host in its xn-- form)"

    @Test(arguments: [
        "https://game.example", "https://game.example:8443", "https://play.studio-1.example.com",
        "https://10.0.0.7", "http://localhost", "http://localhost:5173", "http://127.0.0.1:8080",
        "https://localhost:8443", "https://xn--bcher-kva.example",
    ])
    func originsBrowsersSendAreAccepted(origin: String) {
        #expect(AllowedOrigins.problem(with: origin) == nil)
    }

    @Test(arguments: [
        ("", "is empty"),
        ("game.example", "must start with https:// (http:// only for localhost and 127.0.0.1)"),
        ("HTTPS://game.example", "must start with https:// (http:// only for localhost and 127.0.0.1)"),
        ("ftp://game.example", "must start with https:// (http:// only for localhost and 127.0.0.1)"),
        ("http://game.example", "uses http://, which is allowed only for localhost and 127.0.0.1"),
        ("https://game.example/", "must not have a path, not even a trailing \"/\""),
        ("https://game.example/play", "must not have a path, not even a trailing \"/\""),
        ("https://game.example?x=1", "must not have a query"),
        ("https://game.example#top", "must not have a fragment"),
        ("https://user:secret@game.example", "must not hold user info (name@)"),
        ("https://*.game.example", "holds a wildcard; list every origin itself"),
        ("*", "holds a wildcard; list every origin itself"),
        ("https://Game.Example", "must have a lower-case host (browsers send it so)"),
        ("https://game.example:443", "must leave out the default port 443 (browsers send the origin without it)"),
        ("http://localhost:80", "must leave out the default port 80 (browsers send the origin without it)"),
        ("https://game.example:0", "must have a port of 1…65535 after the \":\""),
        ("https://game.example:65536", "must have a port of 1…65535 after the \":\""),
        ("https://game.example:08443", "must have a port of 1…65535 after the \":\""),
        ("https://game.example:", "must have a port of 1…65535 after the \":\""),
        ("https://:8443", "has no host"),
        ("https://game..example", "has a host that is not a name of letters, digits and hyphens between dots"),
        ("https://-game.example", "has a host that is not a name of letters, digits and hyphens between dots"),
        ("https://game_1.example", "has a host that is not a name of letters, digits and hyphens between dots"),
        ("https://game.example.", "has a host that is not a name of letters, digits and hyphens between dots"),
        ("https://[::1]:8443", "names an IPv6 address, which is not supported"),
        ("https://bücher.example", Self.notASCII),
        ("https://game.example x", Self.notASCII),
        ("https://" + String(repeating: "a", count: 250) + ".example", "is longer than 256 characters"),
    ])
    func anythingElseIsRefusedSayingWhat(origin: String, problem: String) {
        #expect(AllowedOrigins.problem(with: origin) == problem, "\(origin)")
    }

    @Test func aListIsRefusedWithTheFirstBadOriginItsIndexAndTheForm() {
        let error = #expect(throws: IdentityError.self) {
            _ = try AllowedOrigins.check(
                ["https://a.example", "https://b.example/"], field: "settings.allowed_origins")
        }
        #expect(error?.code == .invalidArgument)
        #expect(
            error?.message
                == "settings.allowed_origins[1] \"https://b.example/\" must not have a path, not even a trailing "
                + "\"/\"; an origin is https://host[:port] (or http://localhost[:port] or http://127.0.0.1[:port])")
        let repeated = #expect(throws: IdentityError.self) {
            _ = try AllowedOrigins.check(
                ["https://a.example", "https://b.example", "https://a.example"], field: "allowed_origins.origins")
        }
        #expect(
            repeated?.message == "allowed_origins.origins[2] repeats allowed_origins.origins[0] (\"https://a.example\")"
        )
        let many = (1...21).map { "https://game\($0).example" }
        let tooMany = #expect(throws: IdentityError.self) { _ = try AllowedOrigins.check(many, field: "x") }
        #expect(tooMany?.message == "x may hold at most 20 origins, got 21")
        #expect(throws: Never.self) { _ = try AllowedOrigins.check(Array(many.prefix(20)), field: "x") }
    }

    @Test func createAndUpdateApplicationSetTheOriginsAndListAllowedOriginsUnitesThem() async throws {
        try await Harness.with { harness in
            let first = try await harness.makeApplication(
                settings: .init(
                    twoFactorAllowed: true, crossAppLogin: true,
                    allowedOrigins: ["https://game.example", "http://localhost:5173"]))
            #expect(first.settings?.allowedOrigins == ["https://game.example", "http://localhost:5173"])
            let second = try await harness.makeApplication(
                settings: .init(crossAppLogin: true, allowedOrigins: ["https://game.example", "https://b.example"]))
            func listed() async throws -> [String] {
                try await harness.internalHandlers.listAllowedOrigins(.init(), context: Harness.serviceContext)
                    .origins
            }
            #expect(
                try await listed() == ["http://localhost:5173", "https://b.example", "https://game.example"])

            // Only the origins: every other setting stays.
            let updated = try await harness.admin.updateApplication(
                .init(appId: first.appId, allowedOrigins: .init(origins: ["https://c.example:8443"])),
                context: Harness.adminContext)
            #expect(updated.application?.settings?.allowedOrigins == ["https://c.example:8443"])
            #expect(updated.application?.settings?.twoFactorAllowed == true)
            #expect(try await listed() == ["https://b.example", "https://c.example:8443", "https://game.example"])
            // Every setting: origins left out of them are cleared.
            let replaced = try await harness.admin.updateApplication(
                .init(appId: second.appId, settings: .init(crossAppLogin: true)), context: Harness.adminContext)
            #expect(replaced.application?.settings?.allowedOrigins == [])
            #expect(try await listed() == ["https://c.example:8443"])
            // Read back as stored.
            let read = try await harness.admin.getApplication(.init(appId: first.appId), context: Harness.adminContext)
            #expect(read.application?.settings?.allowedOrigins == ["https://c.example:8443"])
        }
    }

    @Test func badOriginsAreRefusedByCreateAndUpdateAndNothingChanges() async throws {
        try await Harness.with { harness in
            let refusedCreate = await statusCode {
                _ = try await harness.makeApplication(
                    settings: .init(crossAppLogin: true, allowedOrigins: ["https://*.game.example"]))
            }
            #expect(refusedCreate?.code == .invalidArgument)
            #expect(refusedCreate?.message.hasPrefix("settings.allowed_origins[0] \"https://*.game.example\"") == true)

            let app = try await harness.makeApplication(
                settings: .init(crossAppLogin: true, allowedOrigins: ["https://game.example"]))
            let refusedUpdate = await statusCode {
                _ = try await harness.admin.updateApplication(
                    .init(appId: app.appId, allowedOrigins: .init(origins: ["http://game.example"])),
                    context: Harness.adminContext)
            }
            #expect(refusedUpdate?.code == .invalidArgument)
            #expect(
                refusedUpdate?.message.hasPrefix(
                    "allowed_origins.origins[0] \"http://game.example\" uses http://, which is allowed only for "
                        + "localhost and 127.0.0.1") == true)
            let both = await statusCode {
                _ = try await harness.admin.updateApplication(
                    .init(
                        appId: app.appId, settings: .init(crossAppLogin: true),
                        allowedOrigins: .init(origins: [])),
                    context: Harness.adminContext)
            }
            #expect(
                both?.message
                    == "set either settings (every setting, allowed origins included) or allowed_origins (only "
                    + "them), not both")
            let read = try await harness.admin.getApplication(.init(appId: app.appId), context: Harness.adminContext)
            #expect(read.application?.settings?.allowedOrigins == ["https://game.example"])
        }
    }
}
