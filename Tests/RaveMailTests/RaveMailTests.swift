import Foundation
import RaveMail
import RaveTestSupport
import RaveTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct MailMessageTests {
    @Test func rendersAnRFC5322MessageWithAnEncodedUTF8Subject() throws {
        let message = MailMessage(
            from: "no-reply@rave.test", fromName: "Rave Jogos", to: "ana@example.com",
            subject: "Seu código: 123456 ✓", body: "Olá!\nCódigo: 123456\n")
        let text = String(
            decoding: try message.rendered(date: Date(timeIntervalSince1970: 0), messageID: "m1@rave.test"),
            as: UTF8.self)
        let head = try #require(text.components(separatedBy: "\r\n\r\n").first)
        #expect(head.contains("Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"))
        #expect(head.contains("From: Rave Jogos <no-reply@rave.test>\r\n"))
        #expect(head.contains("To: <ana@example.com>\r\n"))
        #expect(head.contains("Message-ID: <m1@rave.test>\r\n"))
        #expect(head.contains("Subject: =?UTF-8?B?"))
        #expect(head.contains("Content-Type: text/plain; charset=UTF-8"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "every line ends in CRLF")
        #expect(text.split(separator: "\r\n").allSatisfy { $0.utf8.count <= 78 })
        let sink = SMTPSink.Mail(envelopeFrom: "", recipients: [], data: text, authenticatedAs: nil)
        #expect(sink.subject == "Seu código: 123456 ✓")
        #expect(sink.body == "Olá!\r\nCódigo: 123456\r\n")
    }

    @Test func aLongUTF8SubjectIsFoldedIntoShortEncodedWords() throws {
        let subject = String(repeating: "é", count: 200)
        let message = MailMessage(from: "a@b.test", to: "c@d.test", subject: subject, body: "x")
        let text = String(decoding: try message.rendered(), as: UTF8.self)
        #expect(text.split(separator: "\r\n").allSatisfy { $0.utf8.count <= 78 })
        let sink = SMTPSink.Mail(envelopeFrom: "", recipients: [], data: text, authenticatedAs: nil)
        #expect(sink.subject == subject)
    }

    @Test(arguments: [
        MailMessage(from: "a@b.test", to: "c@d.test", subject: "hi\r\nBcc: evil@x.test", body: ""),
        MailMessage(from: "a@b.test", to: "c@d.test", subject: "hi\nBcc: evil@x.test", body: ""),
        MailMessage(from: "a@b.test", fromName: "A\rB", to: "c@d.test", subject: "hi", body: ""),
        MailMessage(from: "a@b.test", to: "c@d.test\r\nRCPT TO:<x@y.test>", subject: "hi", body: ""),
        MailMessage(from: "a@b.test", to: "c <c@d.test>", subject: "hi", body: ""),
        MailMessage(from: "a@b.test", to: "nobody", subject: "hi", body: ""),
    ])
    func headerValuesWithLineBreaksOrBadAddressesAreRefused(message: MailMessage) {
        #expect(throws: MailError.self) { try message.rendered() }
    }

    @Test func settingsAcceptOnlySMTPURLsWithoutCredentials() throws {
        #expect(throws: MailError.self) { try SMTPSettings(url: "http://mail.test", from: "a@b.test") }
        #expect(throws: MailError.self) { try SMTPSettings(url: "smtp://user:pw@mail.test", from: "a@b.test") }
        #expect(throws: MailError.self) { try SMTPSettings(url: "smtp://mail.test", from: "not an address") }
        #expect(try SMTPSettings(url: "smtp://127.0.0.1:2525", from: "a@b.test").isLoopback)
        #expect(try !SMTPSettings(url: "smtp://mail.test", from: "a@b.test").isLoopback)
    }

    @Test(arguments: [
        ("smtps://mail.test:465", SMTPSettings.Encryption.implicit),
        ("smtps://127.0.0.1:465", .implicit),
        ("smtp://mail.test", .startTLSRequired),
        ("smtp://10.0.0.25:25", .startTLSRequired),
        ("smtp://127.0.0.1:2525", .startTLSWhenOffered),
        ("smtp://localhost:2525", .startTLSWhenOffered),
        ("smtp://[::1]:2525", .startTLSWhenOffered),
    ])
    func plainSMTPIsAllowedOnlyToAServerOnThisMachine(url: String, encryption: SMTPSettings.Encryption) throws {
        #expect(try SMTPSettings(url: url, from: "a@b.test").encryption == encryption)
    }
}

@Suite struct SMTPSenderTests {
    @Test func sendsThroughARealSMTPServerWithAuth() async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let sender = SMTPSender(
            settings: try SMTPSettings(url: sink.url, from: "no-reply@rave.test", username: "mailer", password: "pw"))
        try await sender.send(
            MailMessage(from: "ignored@x.test", to: "Ana@Example.com", subject: "Código", body: "Line 1\n.dot line\n"))
        let mail = try await sink.waitForMail(to: "ana@example.com")
        #expect(mail.envelopeFrom == "no-reply@rave.test")
        #expect(mail.authenticatedAs == "mailer")
        #expect(mail.subject == "Código")
        #expect(mail.body == "Line 1\r\n.dot line\r\n")
        #expect(mail.header("From") == "<no-reply@rave.test>")
    }

    @Test func startTLSIsUsedWhenTheServerOffersItAndItsCertificateIsVerified() async throws {
        let certificates = try Self.certificates(for: "mail")
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let sink = try SMTPSink(startTLS: ("\(certificates)/mail.pem", "\(certificates)/mail-key.pem"))
        defer { sink.stop() }
        let sender = SMTPSender(
            settings: try SMTPSettings(
                url: sink.url, from: "no-reply@rave.test", username: "mailer", password: "pw",
                caFile: "\(certificates)/ca.pem"))
        try await sender.send(MailMessage(from: "", to: "ana@example.com", subject: "Your code", body: "123456\n"))
        let mail = try await sink.waitForMail(to: "ana@example.com")
        #expect(mail.tlsVersion?.hasPrefix("TLSv1.") == true, "the mail and the password travelled encrypted")
        #expect(mail.authenticatedAs == "mailer")
        #expect(mail.body == "123456\r\n")
    }

    @Test func aServerWhoseCertificateIsNotTrustedGetsNoMail() async throws {
        let certificates = try Self.certificates(for: "mail")
        let otherAuthority = try Self.certificates(for: "other")
        defer {
            for directory in [certificates, otherAuthority] { try? FileManager.default.removeItem(atPath: directory) }
        }
        let sink = try SMTPSink(startTLS: ("\(certificates)/mail.pem", "\(certificates)/mail-key.pem"))
        defer { sink.stop() }
        let sender = SMTPSender(
            settings: try SMTPSettings(
                url: sink.url, from: "no-reply@rave.test", username: "mailer", password: "pw",
                caFile: "\(otherAuthority)/ca.pem"))
        let error = await #expect(throws: MailError.self) {
            try await sender.send(MailMessage(from: "", to: "ana@example.com", subject: "s", body: "b"))
        }
        #expect(error?.message.contains("SMTP delivery to \(sink.url) failed") == true)
        #expect(sink.mails.isEmpty, "nothing was sent to a server that could not prove who it is")
    }

    /// A fresh development CA with a server certificate `name` (SANs 127.0.0.1, localhost).
    static func certificates(for name: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rave-mail-\(UUID().uuidString.prefix(8))").path
        try DevelopmentCertificates.write(to: directory, services: [name], withoutRole: [name])
        return directory
    }

    @Test func aRefusingServerIsAnError() async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        sink.setRefusing(true)
        let sender = SMTPSender(settings: try SMTPSettings(url: sink.url, from: "no-reply@rave.test"))
        let error = await #expect(throws: MailError.self) {
            try await sender.send(MailMessage(from: "", to: "a@b.test", subject: "s", body: "b"))
        }
        #expect(error?.message.contains("SMTP delivery to \(sink.url) failed") == true)
        #expect(sink.mails.isEmpty)
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        // A listening socket that accepts (the kernel's backlog) but never greets.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(silent, $0, length) == 0 && listen(silent, 4) == 0 && getsockname(silent, $0, &length) == 0
            }
        }
        let port = UInt16(bigEndian: address.sin_port)
        let sender = SMTPSender(
            settings: try SMTPSettings(url: "smtp://127.0.0.1:\(port)", from: "a@b.test", timeout: .seconds(1)))
        let error = await #expect(throws: MailError.self) {
            try await sender.send(MailMessage(from: "", to: "a@b.test", subject: "s", body: "b"))
        }
        #expect(error?.message.lowercased().contains("timeout") == true || error?.message.contains("timed out") == true)
    }
}
