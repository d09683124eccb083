import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Which user a device plays as in each application, who played which application, and app data keys.
struct DeviceLoginStore: Sendable {
    let database: any PostgresQueryable

    static let upsertDeviceLogin = PostgresStatement(
        name: "identity_upsert_device_login",
        sql: """
            INSERT INTO device_logins (app_id, device_id, user_id, cross_app) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app_id, device_id) DO UPDATE SET user_id = EXCLUDED.user_id,
                cross_app = EXCLUDED.cross_app, updated_at = now()
            """)
    /// Logging out in any app of a publisher stops cross-app login on that device until the next explicit login.
    static let stopCrossApp = PostgresStatement(
        name: "identity_stop_cross_app",
        sql: """
            UPDATE device_logins SET cross_app = false, updated_at = now()
            WHERE device_id = $1 AND cross_app
                AND app_id IN (SELECT id FROM applications WHERE publisher_id =
                    (SELECT publisher_id FROM applications WHERE id = $2))
            """)
    /// First use of an app: the user plays it, and its app data key there is its Rave ID (implied, see
    /// `appDataKeys`).
    static let recordAppUse = PostgresStatement(
        name: "identity_record_app_use",
        sql: "INSERT INTO app_users (app_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
    static let selectUsedApplication = PostgresStatement(
        name: "identity_select_used_application",
        sql: "SELECT user_id FROM app_users WHERE app_id = $1 AND user_id = ANY($2)")
    static let selectRandomUsers = PostgresStatement(
        name: "identity_select_random_users",
        sql: """
            SELECT a.user_id FROM app_users a JOIN users u ON u.id = a.user_id
            WHERE a.app_id = $1 AND a.user_id <> $2 AND u.merged_into IS NULL ORDER BY random() LIMIT $3
            """)
    static let selectAppDataKeys = PostgresStatement(
        name: "identity_select_app_data_keys",
        sql: """
            SELECT k.selected_key, ARRAY(SELECT c.key FROM app_data_key_candidates c
                WHERE c.user_id = k.user_id AND c.app_id = k.app_id ORDER BY c.key) AS candidates
            FROM app_data_keys k WHERE k.user_id = $1 AND k.app_id = $2 FOR UPDATE
            """)
    static let selectPlayed = PostgresStatement(
        name: "identity_select_played",
        sql: "SELECT 1 AS played FROM app_users WHERE app_id = $2 AND user_id = $1")
    static let selectAppDataKey = PostgresStatement(
        name: "identity_select_app_data_key",
        sql: "UPDATE app_data_keys SET selected_key = $3 WHERE user_id = $1 AND app_id = $2")
    static let deleteCandidates = PostgresStatement(
        name: "identity_delete_app_data_key_candidates",
        sql: "DELETE FROM app_data_key_candidates WHERE user_id = $1 AND app_id = $2")

    /// Points the device at `userID` in the app; `crossApp` lets other apps of the publisher pick the user up.
    func setDeviceUser(appID: RaveID, deviceID: String, userID: RaveID, crossApp: Bool) async throws {
        _ = try await database.execute(Self.upsertDeviceLogin, [appID, deviceID, userID, crossApp])
    }

    func stopCrossAppLogin(deviceID: String, appID: RaveID) async throws {
        _ = try await database.execute(Self.stopCrossApp, [deviceID, appID])
    }

    func recordAppUse(appID: RaveID, userID: RaveID) async throws {
        _ = try await database.execute(Self.recordAppUse, [appID, userID])
    }

    func usersWhoPlayed(appID: RaveID, among userIDs: [RaveID]) async throws -> Set<RaveID> {
        guard !userIDs.isEmpty else { return [] }
        let rows = try await database.execute(Self.selectUsedApplication, [appID, userIDs])
        return Set(try rows.map { try $0.decode(RaveID.self, column: "user_id") })
    }

    func randomUsers(appID: RaveID, excluding userID: RaveID, limit: Int) async throws -> [RaveID] {
        return try await database.execute(Self.selectRandomUsers, [appID, userID, Int64(limit)]).map {
            try $0.decode(RaveID.self, column: "user_id")
        }
    }

    /// The selected key and the candidates waiting for a choice; nil before the user first played the app.
    ///
    /// A user who played the app without an `app_data_keys` row has the implied key, its own Rave ID: a first login
    /// writes no key row (one row fewer on the hottest insert path), and only a merge makes keys differ, so a merge
    /// writes the implied rows of both users before it combines them (`MergeStore.moveStatements`).
    func appDataKeys(userID: RaveID, appID: RaveID) async throws -> (selected: String?, candidates: [String])? {
        if let row = try await database.execute(Self.selectAppDataKeys, [userID, appID]).first {
            return (try row.decode(column: "selected_key"), try row.decode(column: "candidates"))
        }
        guard try await database.execute(Self.selectPlayed, [userID, appID]).first != nil else { return nil }
        return (userID.hex, [])
    }

    func selectAppDataKey(userID: RaveID, appID: RaveID, key: String) async throws {
        _ = try await database.execute(Self.selectAppDataKey, [userID, appID, key])
        _ = try await database.execute(Self.deleteCandidates, [userID, appID])
    }
}
