import Foundation
import RaveCrypto

/// Hashes and checks passwords with scrypt (RaveCrypto's `Scrypt`, OpenSSL underneath) and a per-password random
/// salt.
///
/// Encoded form: `scrypt$N$r$p$<salt>$<hash>` (salt and hash base64url without padding), so every stored hash
/// carries its own parameters and they can be raised later: `needsRehash` tells the login path to re-hash with
/// the current parameters once the password is known to be right.
///
/// Cost: the default N=2^15, r=8, p=1 needs 128·N·r = 32 MiB of memory and about 100 ms of one core per call
/// (measured in `CryptoPasswordTests`). The work runs on the calling task: it is pure CPU (no blocking syscalls),
/// but each call occupies a cooperative-pool thread for that long, so password logins are bounded by about 10 per
/// second per core.
public struct PasswordHasher: Sendable {
    /// scrypt's cost parameters.
    public struct Parameters: Hashable, Sendable, CustomStringConvertible {
        /// CPU/memory cost, a power of two.
        public var cost: UInt64
        /// Block size.
        public var blockSize: UInt64
        /// Parallelisation.
        public var parallelism: UInt64

        /// Creates parameters; `cost` must be a power of two greater than 1.
        public init(cost: UInt64, blockSize: UInt64, parallelism: UInt64) {
            self.cost = cost
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// N=2^15, r=8, p=1: the interactive-login parameters OWASP recommends (32 MiB, tens of milliseconds).
        public static let `default` = Parameters(cost: 1 << 15, blockSize: 8, parallelism: 1)

        /// Deliberately weak parameters (N=2^4) so tests that create many accounts stay fast.
        ///
        /// Never in production.
        public static let testing = Parameters(cost: 1 << 4, blockSize: 8, parallelism: 1)

        // Bounds for decoded hashes, so a corrupted row cannot make a login allocate gigabytes.
        var isWithinLimits: Bool {
            cost > 1 && cost & (cost - 1) == 0 && cost <= 1 << 20 && (1...32).contains(blockSize)
                && (1...16).contains(parallelism)
        }

        public var description: String { "scrypt N=\(cost) r=\(blockSize) p=\(parallelism)" }
    }

    /// The parameters new hashes are made with.
    public var parameters: Parameters

    static let saltLength = 16
    static let hashLength = 32

    /// Creates a hasher that hashes with `parameters`.
    public init(parameters: Parameters = .default) {
        self.parameters = parameters
    }

    /// Hashes a password with a new random salt and returns the self-describing encoded string.
    public func hash(_ password: String) throws(CryptoError) -> String {
        guard parameters.isWithinLimits else {
            throw .configuration("scrypt parameters out of range: \(parameters)")
        }
        let salt = try SecureRandom.bytes(count: Self.saltLength)
        let derived = try Self.derive(password: password, salt: salt, parameters: parameters)
        return "scrypt$\(parameters.cost)$\(parameters.blockSize)$\(parameters.parallelism)$"
            + "\(Base64URL.encode(salt))$\(Base64URL.encode(derived))"
    }

    /// True when `password` matches `encoded`; throws only when `encoded` is not a valid hash string.
    ///
    /// The final comparison is constant-time; the scrypt work itself does not depend on the password's content.
    public func verify(_ password: String, against encoded: String) throws(CryptoError) -> Bool {
        let stored = try Self.decode(encoded)
        let derived = try Self.derive(password: password, salt: stored.salt, parameters: stored.parameters)
        return ConstantTime.equals(derived, stored.hash)
    }

    /// True when `encoded` was made with parameters other than the current ones (or cannot be read).
    public func needsRehash(_ encoded: String) -> Bool {
        guard let stored = try? Self.decode(encoded) else { return true }
        return stored.parameters != parameters || stored.hash.count != Self.hashLength
    }

    // MARK: - Encoding

    static func decode(_ encoded: String) throws(CryptoError) -> (parameters: Parameters, salt: [UInt8], hash: [UInt8])
    {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0] == "scrypt" else {
            throw .invalidArgument("password hash is not in the form scrypt$N$r$p$salt$hash")
        }
        guard let cost = UInt64(fields[1]), let blockSize = UInt64(fields[2]), let parallelism = UInt64(fields[3])
        else {
            throw .invalidArgument("password hash has non-numeric scrypt parameters")
        }
        let parameters = Parameters(cost: cost, blockSize: blockSize, parallelism: parallelism)
        guard parameters.isWithinLimits else {
            throw .invalidArgument("password hash has scrypt parameters out of range: \(parameters)")
        }
        guard let salt = Base64URL.decode(fields[4]), salt.count >= 8,
            let hash = Base64URL.decode(fields[5]), hash.count >= 16
        else {
            throw .invalidArgument("password hash has a malformed salt or hash")
        }
        return (parameters, salt, hash)
    }

    // MARK: - scrypt

    static func derive(password: String, salt: [UInt8], parameters: Parameters) throws(CryptoError) -> [UInt8] {
        // NFC so the same password typed on systems that compose accents differently still matches.
        try Scrypt.derive(
            password: Array(password.precomposedStringWithCanonicalMapping.utf8), salt: salt, cost: parameters.cost,
            blockSize: parameters.blockSize, parallelism: parameters.parallelism, length: hashLength)
    }
}
