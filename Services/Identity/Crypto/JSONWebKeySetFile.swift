import Foundation
import Synchronization

/// A provider's JWKS document on disk, parsed into keys and re-read when the file changes.
///
/// The file is re-read at most once per `reloadInterval`, on the verifying call, and parsed again only when its
/// bytes changed: a small local read every few seconds, cheap enough not to need a background task. Comparing
/// content rather than the modification time also catches two writes within one timestamp tick. A file that fails to parse keeps
/// the previous keys in service (a half-written file during deployment must not lock players out); the error is
/// reported only while no keys have ever loaded.
final class JSONWebKeySetFile: Sendable {
    let path: String
    let reloadInterval: Duration

    private struct State {
        var keys: [String: JSONWebKey] = [:]
        var contents: Data?
        var lastCheck: ContinuousClock.Instant?
        var loadError: CryptoError?
    }

    private let state = Mutex(State())

    init(path: String, reloadInterval: Duration = .seconds(5)) {
        self.path = path
        self.reloadInterval = reloadInterval
    }

    /// The key with id `keyID`, reloading the file first when it is due for a check.
    func key(forKeyID keyID: String) throws(CryptoError) -> JSONWebKey? {
        let now = ContinuousClock.now
        let due = state.withLock { state in
            guard let lastCheck = state.lastCheck, now - lastCheck < reloadInterval else {
                state.lastCheck = now
                return true
            }
            return false
        }
        if due { reloadIfChanged() }
        return try state.withLock { state throws(CryptoError) in
            if state.keys.isEmpty, let error = state.loadError { throw error }
            return state.keys[keyID]
        }
    }

    private func reloadIfChanged() {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            state.withLock { $0.loadError = .configuration("cannot read JWKS file \(path): \(error)") }
            return
        }
        guard state.withLock({ $0.contents != contents || $0.keys.isEmpty }) else { return }
        // Parsing happens outside the lock; two concurrent reloads of the same file produce the same keys.
        do throws(CryptoError) {
            let keys = try Self.parse(contents, path: path)
            state.withLock { state in
                state.keys = keys
                state.contents = contents
                state.loadError = nil
            }
        } catch {
            state.withLock { $0.loadError = error }
        }
    }

    /// Parses a JWKS file into keys by id.
    ///
    /// Keys of other types or uses (encryption) are skipped; a malformed
    /// RSA or EC key makes the whole file invalid, because that means the file is not what we think it is.
    static func parse(contentsOf path: String) throws(CryptoError) -> [String: JSONWebKey] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .configuration("cannot read JWKS file \(path): \(error.localizedDescription)")
        }
        return try parse(data, path: path)
    }

    /// Parses the bytes of the JWKS file at `path` (named in error messages).
    static func parse(_ data: Data, path: String) throws(CryptoError) -> [String: JSONWebKey] {
        struct Document: Decodable {
            var keys: [[String: JSONMember]]
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch {
            throw .configuration("JWKS file \(path) is not a JSON object with a keys array")
        }
        var keys: [String: JSONWebKey] = [:]
        for entry in document.keys {
            let members = entry.compactMapValues(\.string)
            guard members["kty"] == "RSA" || members["kty"] == "EC", members["use"] ?? "sig" == "sig" else { continue }
            guard let keyID = members["kid"], !keyID.isEmpty else {
                throw .configuration("JWKS file \(path) has a key without kid")
            }
            keys[keyID] = try JSONWebKey(keyID: keyID, members: members)
        }
        guard !keys.isEmpty else { throw .configuration("JWKS file \(path) has no RSA or EC signing keys") }
        return keys
    }
}

/// A JWK member: only string members matter, others (`key_ops` arrays, numbers) are tolerated and ignored.
struct JSONMember: Decodable {
    var string: String?

    init(from decoder: any Decoder) throws {
        string = try? decoder.singleValueContainer().decode(String.self)
    }
}
