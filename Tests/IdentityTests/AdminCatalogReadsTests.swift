import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Operators read back what they set up: publishers, applications and mail templates, within their publisher scope
/// (docs/identity.md, "Publishers and applications").
@Suite("Operators read publishers, applications and mail templates")
struct AdminCatalogReadsTests {
    typealias Harness = IdentityHarness

    /// Every page of `read`, one `pageSize` at a time, in order; at most 20 pages.
    static func pages<Item>(
        _ read: (String) async throws -> (items: [Item], next: String)
    ) async throws -> [Item] {
        var items: [Item] = []
        var token = ""
        for _ in 0..<20 {
            let page = try await read(token)
            items += page.items
            token = page.next
            if token.isEmpty { break }
        }
        return items
    }

    @Test func listPublishersShowsAnOperatorItsOwnPublisherAndAnOwnerOfAllEveryOneOldestFirst() async throws {
        try await Harness.with { harness in
            var publishers: [String] = []
            for _ in 0..<3 { publishers.append(try await harness.makeApplication().publisherId) }
            let renamed = try await harness.admin.updatePublisher(
                .init(publisherId: publishers[1], name: "Second Studio"),
                context: OperatorTests.certificate("UpdatePublisher"))

            let certificate = try await Self.pages { token in
                let page = try await harness.admin.listPublishers(
                    .init(pageSize: 1, pageToken: token), context: OperatorTests.certificate("ListPublishers"))
                #expect(page.publishers.count <= 1)
                return (page.publishers, page.nextPageToken)
            }
            #expect(certificate.map(\.publisherId) == publishers)
            #expect(certificate[1] == renamed.publisher)

            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: publishers[1])
            let own = try await harness.admin.listPublishers(
                .init(), context: OperatorTests.operatorContext(viewer.tokens, "ListPublishers"))
            #expect(own.publishers.map(\.publisherId) == [publishers[1]])
            #expect(own.nextPageToken.isEmpty)

            let owner = try await OperatorTests.enrol(
                harness, email: "owner@example.com", role: .owner, allPublishers: true)
            let every = try await harness.admin.listPublishers(
                .init(pageSize: 100), context: OperatorTests.operatorContext(owner.tokens, "ListPublishers"))
            #expect(every.publishers.map(\.publisherId) == publishers)

            let badSize = await statusCode {
                _ = try await harness.admin.listPublishers(
                    .init(pageSize: 500), context: OperatorTests.certificate("ListPublishers"))
            }
            #expect(badSize?.code == .invalidArgument)
            #expect(badSize?.message == "page_size must be 1…100 (0 means 50), got 500")
            let badToken = await statusCode {
                _ = try await harness.admin.listPublishers(
                    .init(pageToken: "nonsense"), context: OperatorTests.certificate("ListPublishers"))
            }
            #expect(badToken?.code == .invalidArgument)
            #expect(badToken?.message == "page_token must be a next_page_token ListPublishers returned")
        }
    }

    @Test func listApplicationsAnswersWhatGetApplicationDoesWithinThePublisherScope() async throws {
        try await Harness.with { harness in
            let first = try await harness.makeApplication(
                settings: .init(mergePolicy: .prompt, crossAppLogin: true, allowedOrigins: ["https://studio.test"]))
            let publisher = first.publisherId
            var created = [first]
            for _ in 0..<2 { created.append(try await harness.makeApplication(publisherID: publisher)) }
            let elsewhere = try await harness.makeApplication()

            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: publisher)
            let context = OperatorTests.operatorContext(viewer.tokens, "ListApplications")
            let listed = try await Self.pages { token in
                let page = try await harness.admin.listApplications(
                    .init(publisherId: publisher, pageSize: 2, pageToken: token), context: context)
                #expect(page.applications.count <= 2)
                return (page.applications, page.nextPageToken)
            }
            #expect(listed.map(\.appId) == created.map(\.appId))
            for application in listed {
                let single = try await harness.admin.getApplication(
                    .init(appId: application.appId),
                    context: OperatorTests.operatorContext(viewer.tokens, "GetApplication"))
                #expect(single.application == application)
            }
            #expect(listed.first?.settings?.allowedOrigins == ["https://studio.test"])
            #expect(listed.first?.settings?.mergePolicy == .prompt)

            let otherPublisher = await statusCode {
                _ = try await harness.admin.listApplications(
                    .init(publisherId: elsewhere.publisherId), context: context)
            }
            #expect(otherPublisher?.code == .permissionDenied)
            #expect(
                otherPublisher?.message
                    == "this operator acts for publisher \(publisher) only, not \(elsewhere.publisherId)")
            let unknown = RaveID.random().hex
            let missing = await statusCode {
                _ = try await harness.admin.listApplications(
                    .init(publisherId: unknown), context: OperatorTests.certificate("ListApplications"))
            }
            #expect(missing?.code == .notFound)
            #expect(missing?.message == "no publisher \(unknown)")
            let malformed = await statusCode {
                _ = try await harness.admin.listApplications(
                    .init(publisherId: "studio"), context: OperatorTests.certificate("ListApplications"))
            }
            #expect(malformed?.code == .invalidArgument)
            let badToken = await statusCode {
                _ = try await harness.admin.listApplications(
                    .init(publisherId: publisher, pageToken: "1.2"),
                    context: OperatorTests.certificate("ListApplications"))
            }
            #expect(badToken?.message == "page_token must be a next_page_token ListApplications returned")
        }
    }

    @Test func listMailTemplatesReadsBackWhatSetMailTemplateSetByKindThenLanguage() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let other = try await harness.makeApplication()
            let set = OperatorTests.certificate("SetMailTemplate")
            let texts: [(IdentityV1.MailKind, String, String, String)] = [
                (.passwordReset, "nl", "Je code", "Code: {{code}}"),
                (.verifyEmail, "pt-BR", "Seu código", "Código: {{code}}"),
                (.exportReady, "en", "Your data", "It is ready."),
                (.verifyEmail, "en", "Your code", "Code: {{code}}"),
                (.passwordReset, "de", "Ihr Code", "Code: {{code}}"),
            ]
            for (kind, language, subject, body) in texts {
                _ = try await harness.admin.setMailTemplate(
                    .init(appId: app.appId, kind: kind, language: language, subject: subject, body: body), context: set)
            }
            // Removed: no longer listed.
            _ = try await harness.admin.setMailTemplate(
                .init(appId: app.appId, kind: .passwordReset, language: "de"), context: set)
            _ = try await harness.admin.setMailTemplate(
                .init(appId: other.appId, kind: .verifyEmail, language: "en", subject: "Other", body: "{{code}}"),
                context: set)

            let viewer = try await OperatorTests.enrol(
                harness, email: "viewer@example.com", role: .viewer, publisherID: app.publisherId)
            let context = OperatorTests.operatorContext(viewer.tokens, "ListMailTemplates")
            let listed = try await harness.admin.listMailTemplates(.init(appId: app.appId), context: context)
                .templates
            #expect(listed.map(\.kind) == [.verifyEmail, .verifyEmail, .passwordReset, .exportReady])
            #expect(listed.map(\.language) == ["en", "pt-br", "nl", "en"])
            #expect(listed.map(\.subject) == ["Your code", "Seu código", "Je code", "Your data"])
            #expect(listed.map(\.body) == ["Code: {{code}}", "Código: {{code}}", "Code: {{code}}", "It is ready."])
            #expect(listed.allSatisfy { $0.updatedAtUnixMs > 0 })

            let outOfScope = await statusCode {
                _ = try await harness.admin.listMailTemplates(.init(appId: other.appId), context: context)
            }
            #expect(outOfScope?.code == .permissionDenied)
            let unknown = RaveID.random().hex
            let missing = await statusCode {
                _ = try await harness.admin.listMailTemplates(
                    .init(appId: unknown), context: OperatorTests.certificate("ListMailTemplates"))
            }
            #expect(missing?.code == .notFound)
            let none = try await harness.admin.listMailTemplates(
                .init(appId: try await harness.makeApplication().appId),
                context: OperatorTests.certificate("ListMailTemplates"))
            #expect(none.templates.isEmpty)
        }
    }
}
