import Foundation
import RaveMessages
import RavePostgres

/// An application's mail templates read back for operators.
extension MailStore {
    static let selectTemplates = PostgresStatement(
        name: "identity_mail_templates",
        sql: """
            SELECT kind, language, subject, body, updated_at FROM mail_templates WHERE app_id = $1
            ORDER BY array_position(ARRAY['verify_email', 'password_reset', 'export_ready'], kind), language
            """)

    /// Every template of the application, by kind (as `MailKind` numbers them), then language.
    func templates(appID: RaveID) async throws -> [IdentityV1.MailTemplate] {
        try await database.execute(Self.selectTemplates, [appID]).map { row in
            let kind = IdentityMail.Kind(rawValue: try row.decode(String.self, column: "kind"))
            return IdentityV1.MailTemplate(
                kind: kind?.message ?? .unspecified, language: try row.decode(String.self, column: "language"),
                subject: try row.decode(String.self, column: "subject"),
                body: try row.decode(String.self, column: "body"),
                updatedAtUnixMs: try row.decode(Date.self, column: "updated_at").unixMilliseconds)
        }
    }
}

extension IdentityMail.Kind {
    /// The kind as the protocol names it.
    var message: IdentityV1.MailKind {
        switch self {
        case .verifyEmail: .verifyEmail
        case .passwordReset: .passwordReset
        case .exportReady: .exportReady
        }
    }
}
