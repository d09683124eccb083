import Foundation
import RaveCrypto

/// The secret key file identity needs (`RAVE_SECRET_KEY_FILE`), as tests make it: one fresh key, mode 0600.
public enum SecretKeyFile {
    /// Writes a key file with one new key `keyID` into `directory` and returns its path.
    public static func write(in directory: String, keyID: String = "test-1") throws -> String {
        let path = (directory as NSString).appendingPathComponent("secret-keys")
        let contents = "# identity's secret keys (test)\n" + (try SecretKeyRing.newKeyLine(id: keyID)) + "\n"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600])
        else { throw CryptoError.configuration("cannot write the test secret key file \(path)") }
        return path
    }

    /// A key ring of one fresh key, for services started in-process.
    public static func ring(keyID: String = "test-1") throws -> SecretKeyRing {
        try SecretKeyRing(entries: [.init(id: keyID, key: SymmetricKey())])
    }
}
