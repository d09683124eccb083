import RaveMessages
import RavePostgres

/// Apps' notification templates per event topic and language, and each app's default language.
struct TemplateStore: Sendable {
    static let upsert = PostgresStatement(
        name: "push_upsert_template",
        sql: """
            INSERT INTO notification_templates (app_id, topic, language, title, body) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (app_id, topic, language) DO UPDATE SET title = $4, body = $5, updated_at = now()
            """)
    static let delete = PostgresStatement(
        name: "push_delete_template",
        sql: "DELETE FROM notification_templates WHERE app_id = $1 AND topic = $2 AND language = $3")
    // An empty topic lists every topic's templates.
    static let list = PostgresStatement(
        name: "push_list_templates",
        sql: """
            SELECT topic, language, title, body FROM notification_templates
            WHERE app_id = $1 AND ($2 = '' OR topic = $2) ORDER BY topic, language
            """)
    static let selectDefaultLanguage = PostgresStatement(
        name: "push_select_default_language",
        sql: "SELECT default_language FROM app_languages WHERE app_id = $1")
    static let upsertDefaultLanguage = PostgresStatement(
        name: "push_upsert_default_language",
        sql: """
            INSERT INTO app_languages (app_id, default_language) VALUES ($1, $2)
            ON CONFLICT (app_id) DO UPDATE SET default_language = $2
            """)
    static let deleteDefaultLanguage = PostgresStatement(
        name: "push_delete_default_language", sql: "DELETE FROM app_languages WHERE app_id = $1")
    // What an event's notification needs in one round trip: the app's templates of the topic, its default
    // language, and the languages of the recipient's devices in the app.
    static let selectForEvent = PostgresStatement(
        name: "push_select_templates_for_event",
        sql: """
            SELECT 't' AS kind, language, title, body FROM notification_templates WHERE app_id = $1 AND topic = $2
            UNION ALL SELECT 'd', default_language, '', '' FROM app_languages WHERE app_id = $1
            UNION ALL SELECT DISTINCT 'l', language, '', '' FROM device_tokens WHERE app_id = $1 AND user_id = $3
            """)

    func set(appID: String, _ template: PushV1.Template, on database: some PostgresQueryable) async throws {
        _ = try await database.execute(
            Self.upsert, [appID, template.topic, template.language, template.title, template.body])
    }

    /// Whether a template was removed.
    func delete(
        appID: String, topic: String, language: String, on database: some PostgresQueryable
    ) async throws
        -> Bool
    {
        try await database.execute(Self.delete, [appID, topic, language]).affectedRowCount > 0
    }

    func list(appID: String, topic: String, on database: some PostgresQueryable) async throws -> [PushV1.Template] {
        try await database.execute(Self.list, [appID, topic]).map { row in
            PushV1.Template(
                topic: try row.decode(String.self, at: 0), language: try row.decode(String.self, at: 1),
                title: try row.decode(String.self, at: 2), body: try row.decode(String.self, at: 3))
        }
    }

    /// The app's default language, empty when it has none.
    func defaultLanguage(appID: String, on database: some PostgresQueryable) async throws -> String {
        try await database.execute(Self.selectDefaultLanguage, [appID]).first?.decode(String.self, at: 0) ?? ""
    }

    func setDefaultLanguage(appID: String, _ language: String, on database: some PostgresQueryable) async throws {
        if language.isEmpty {
            _ = try await database.execute(Self.deleteDefaultLanguage, [appID])
        } else {
            _ = try await database.execute(Self.upsertDefaultLanguage, [appID, language])
        }
    }

    /// The app's templates of `topic` by language, its default language, and the languages of `user`'s devices.
    func forEvent(
        appID: String, topic: String, user: RaveID, on database: some PostgresQueryable
    ) async throws -> (templates: [String: PushV1.Template], defaultLanguage: String, deviceLanguages: Set<String>) {
        var templates: [String: PushV1.Template] = [:]
        var defaultLanguage = ""
        var deviceLanguages: Set<String> = []
        for row in try await database.execute(Self.selectForEvent, [appID, topic, user]) {
            let language = try row.decode(String.self, at: 1)
            switch try row.decode(String.self, at: 0) {
            case "t":
                templates[language] = PushV1.Template(
                    topic: topic, language: language, title: try row.decode(String.self, at: 2),
                    body: try row.decode(String.self, at: 3))
            case "d": defaultLanguage = language
            default: deviceLanguages.insert(language)
            }
        }
        return (templates, defaultLanguage, deviceLanguages)
    }
}
