import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// An application as the handlers use it.
struct ApplicationRecord: Sendable {
    var id: RaveID
    var publisherID: RaveID
    var name: String
    var settings: IdentityV1.ApplicationSettings
    var createdAt: Date

    var message: IdentityV1.Application {
        IdentityV1.Application(
            appId: id.hex, publisherId: publisherID.hex, name: name, settings: settings,
            createdAtUnixMs: createdAt.unixMilliseconds)
    }
}

/// Publishers and applications.
struct ApplicationStore: Sendable {
    let database: any PostgresQueryable

    static let columns = """
        id, publisher_id, name, display_name_scope, picture_scope, allow_force_disconnect, merge_policy, \
        two_factor_allowed, cross_app_login, allowed_origins, created_at
        """
    static let insertPublisher = PostgresStatement(
        name: "identity_insert_publisher",
        sql: "INSERT INTO publishers (id, name) VALUES ($1, $2) RETURNING created_at")
    static let updatePublisher = PostgresStatement(
        name: "identity_update_publisher",
        sql: "UPDATE publishers SET name = $2 WHERE id = $1 RETURNING created_at")
    static let insertApplication = PostgresStatement(
        name: "identity_insert_application",
        sql: """
            INSERT INTO applications (id, publisher_id, name, display_name_scope, picture_scope,
                allow_force_disconnect, merge_policy, two_factor_allowed, cross_app_login, allowed_origins)
            SELECT $1, p.id, $3, $4, $5, $6, $7, $8, $9, $10 FROM publishers p WHERE p.id = $2
            RETURNING \(columns)
            """)
    static let updateApplication = PostgresStatement(
        name: "identity_update_application",
        sql: """
            UPDATE applications SET name = coalesce($2, name), display_name_scope = coalesce($3, display_name_scope),
                picture_scope = coalesce($4, picture_scope),
                allow_force_disconnect = coalesce($5, allow_force_disconnect),
                merge_policy = coalesce($6, merge_policy), two_factor_allowed = coalesce($7, two_factor_allowed),
                cross_app_login = coalesce($8, cross_app_login), allowed_origins = coalesce($9, allowed_origins)
            WHERE id = $1 RETURNING \(columns)
            """)
    static let selectApplication = PostgresStatement(
        name: "identity_select_application", sql: "SELECT \(columns) FROM applications WHERE id = $1")
    static let selectApplications = PostgresStatement(
        name: "identity_select_applications", sql: "SELECT \(columns) FROM applications WHERE id = ANY($1)")
    /// Every application's allowed origins, each once, sorted: one row of one array.
    static let selectAllowedOrigins = PostgresStatement(
        name: "identity_select_allowed_origins",
        sql: """
            SELECT coalesce(array_agg(DISTINCT origin ORDER BY origin), '{}') AS origins
            FROM applications, unnest(allowed_origins) AS origin
            """)

    func createPublisher(name: String) async throws -> IdentityV1.Publisher {
        let id = RaveID.random()
        let rows = try await database.execute(Self.insertPublisher, [id, name])
        let createdAt = try rows[0].decode(Date.self, column: "created_at")
        return IdentityV1.Publisher(publisherId: id.hex, name: name, createdAtUnixMs: createdAt.unixMilliseconds)
    }

    func updatePublisher(id: RaveID, name: String) async throws -> IdentityV1.Publisher {
        let rows = try await database.execute(Self.updatePublisher, [id, name])
        guard let row = rows.first else { throw IdentityError.notFound("no publisher \(id.hex)") }
        let createdAt = try row.decode(Date.self, column: "created_at")
        return IdentityV1.Publisher(publisherId: id.hex, name: name, createdAtUnixMs: createdAt.unixMilliseconds)
    }

    func createApplication(
        publisherID: RaveID, name: String, settings: IdentityV1.ApplicationSettings
    ) async throws -> ApplicationRecord {
        let values = SettingsColumns(settings)
        let rows = try await database.execute(
            Self.insertApplication,
            [
                RaveID.random(), publisherID, name, values.displayNameScope, values.pictureScope,
                settings.allowForceDisconnect, values.mergePolicy, settings.twoFactorAllowed, settings.crossAppLogin,
                settings.allowedOrigins,
            ])
        guard let row = rows.first else { throw IdentityError.notFound("no publisher \(publisherID.hex)") }
        return try Self.record(row)
    }

    /// Changes what is given: the name, every setting (`settings`), or only the allowed origins (`origins`, when
    /// `settings` is nil).
    func updateApplication(
        id: RaveID, name: String?, settings: IdentityV1.ApplicationSettings?, origins: [String]? = nil
    ) async throws -> ApplicationRecord {
        let values = settings.map(SettingsColumns.init)
        let rows = try await database.execute(
            Self.updateApplication,
            [
                id, name, values?.displayNameScope, values?.pictureScope, settings?.allowForceDisconnect,
                values?.mergePolicy, settings?.twoFactorAllowed, settings?.crossAppLogin,
                settings?.allowedOrigins ?? origins,
            ])
        guard let row = rows.first else { throw IdentityError.notFound("no application \(id.hex)") }
        return try Self.record(row)
    }

    /// The application, or NOT_FOUND naming it.
    func application(_ id: RaveID) async throws -> ApplicationRecord {
        let rows = try await database.execute(Self.selectApplication, [id])
        guard let row = rows.first else { throw IdentityError.notFound("no application \(id.hex)") }
        return try Self.record(row)
    }

    /// The applications with these ids; unknown ids are left out.
    func applications(_ ids: [RaveID]) async throws -> [RaveID: ApplicationRecord] {
        guard !ids.isEmpty else { return [:] }
        var found: [RaveID: ApplicationRecord] = [:]
        for row in try await database.execute(Self.selectApplications, [ids]) {
            let record = try Self.record(row)
            found[record.id] = record
        }
        return found
    }

    /// Every origin some application allows, each once, sorted.
    func allowedOrigins() async throws -> [String] {
        try await database.execute(Self.selectAllowedOrigins, []).first?.decode([String].self, column: "origins") ?? []
    }

    static func record(_ row: PostgresRow) throws -> ApplicationRecord {
        var settings = IdentityV1.ApplicationSettings()
        settings.displayNameScope = scope(try row.decode(String.self, column: "display_name_scope"))
        settings.pictureScope = scope(try row.decode(String.self, column: "picture_scope"))
        settings.allowForceDisconnect = try row.decode(Bool.self, column: "allow_force_disconnect")
        settings.mergePolicy =
            switch try row.decode(String.self, column: "merge_policy") {
            case "prompt": .prompt
            case "automatic": .automatic
            default: IdentityV1.MergePolicy.none
            }
        settings.twoFactorAllowed = try row.decode(Bool.self, column: "two_factor_allowed")
        settings.crossAppLogin = try row.decode(Bool.self, column: "cross_app_login")
        settings.allowedOrigins = try row.decode([String].self, column: "allowed_origins")
        return ApplicationRecord(
            id: try row.decode(RaveID.self, column: "id"),
            publisherID: try row.decode(RaveID.self, column: "publisher_id"),
            name: try row.decode(String.self, column: "name"), settings: settings,
            createdAt: try row.decode(Date.self, column: "created_at"))
    }

    private static func scope(_ text: String) -> IdentityV1.ValueScope {
        text == "application" ? .application : .global
    }
}

/// Settings as the columns spell them; unspecified enum values take the defaults.
private struct SettingsColumns {
    var displayNameScope: String
    var pictureScope: String
    var mergePolicy: String

    init(_ settings: IdentityV1.ApplicationSettings) {
        displayNameScope = settings.displayNameScope == .application ? "application" : "global"
        pictureScope = settings.pictureScope == .application ? "application" : "global"
        mergePolicy =
            switch settings.mergePolicy {
            case .prompt: "prompt"
            case .automatic: "automatic"
            default: "none"
            }
    }
}
