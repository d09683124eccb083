import Foundation
import Glibc

/// The tokens `ravectl login` obtained, reused by `call` and `batch`.
struct StoredCredentials {
    var target: String
    var appId: String
    var userId: String
    var accessToken: String
    var accessTokenExpiresAtUnixMs: Int64
    var refreshToken: String
    var sessionId: String
}

/// Keeps credentials in `$XDG_CONFIG_HOME/rave/credentials.json` (or `~/.config/rave/credentials.json`),
/// readable by the user only: the refresh token is as good as a password.
enum CredentialStore {
    struct StoreError: Error, CustomStringConvertible {
        var description: String
    }

    /// The credentials file's path.
    static func path() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty { return "\(config)/rave/credentials.json" }
        guard let home = environment["HOME"], !home.isEmpty else {
            throw StoreError(description: "neither XDG_CONFIG_HOME nor HOME is set; cannot place credentials.json")
        }
        return "\(home)/.config/rave/credentials.json"
    }

    /// The stored credentials, or nil when nobody logged in.
    static func load() throws -> StoredCredentials? {
        let file = try path()
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw StoreError(description: "\(file) is not valid JSON; delete it and run ravectl login again")
        }
        func text(_ key: String) -> String { object[key] as? String ?? "" }
        return StoredCredentials(
            target: text("target"), appId: text("app_id"), userId: text("user_id"), accessToken: text("access_token"),
            accessTokenExpiresAtUnixMs: Int64(text("access_token_expires_at_unix_ms")) ?? 0,
            refreshToken: text("refresh_token"), sessionId: text("session_id"))
    }

    /// Writes `credentials` with mode 0600 (the directory 0700), replacing the file atomically.
    static func save(_ credentials: StoredCredentials) throws {
        let file = try path()
        let directory = (file as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let object: [String: String] = [
            "target": credentials.target, "app_id": credentials.appId, "user_id": credentials.userId,
            "access_token": credentials.accessToken,
            "access_token_expires_at_unix_ms": String(credentials.accessTokenExpiresAtUnixMs),
            "refresh_token": credentials.refreshToken, "session_id": credentials.sessionId,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        let temporary = "\(file).\(getpid()).tmp"
        // Created 0600 rather than chmod-ed afterwards, so the tokens are never readable by others.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw StoreError(description: "cannot create \(temporary): errno \(errno)") }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == data.count, rename(temporary, file) == 0 else {
            unlink(temporary)
            throw StoreError(description: "cannot write \(file): errno \(errno)")
        }
    }
}
