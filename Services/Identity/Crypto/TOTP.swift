import Foundation

/// Time-based one-time passwords (RFC 6238) as authenticator apps implement them: HMAC-SHA1, 6 digits, 30 s.
///
/// `verify` accepts the current step and one on either side (clock drift and typing time) and returns the step
/// that matched; the caller stores it and passes it back as `lastUsedStep`, so a code is accepted only once.
public struct TOTP: Sendable, Hashable {
    /// Digits per code.
    public static let digits = 6
    /// Seconds per time step.
    public static let period: Int64 = 30
    /// Steps accepted on either side of the current one.
    public static let window: Int64 = 1
    /// Bytes in a generated secret: 160 bits, the HMAC-SHA1 block-size recommendation of RFC 4226.
    public static let secretLength = 20

    /// The shared secret.
    public let secret: [UInt8]

    /// Creates a generator for an existing secret.
    public init(secret: [UInt8]) {
        self.secret = secret
    }

    /// Creates a generator from a base32 secret (as stored or as typed); nil when it is not base32 or empty.
    public init?(base32Secret: String) {
        guard let secret = Base32.decode(base32Secret), !secret.isEmpty else { return nil }
        self.secret = secret
    }

    /// A generator with a new random 20-byte secret.
    public static func generate() throws(CryptoError) -> TOTP {
        TOTP(secret: try SecureRandom.bytes(count: secretLength))
    }

    /// The secret in base32 without padding, as shown to users and put in the otpauth URL.
    public var base32Secret: String { Base32.encode(secret) }

    /// The `otpauth://` URL authenticator apps read from a QR code (Google Authenticator's key-URI format).
    public func provisioningURL(issuer: String, account: String) -> String {
        let label = percentEncoded(issuer) + ":" + percentEncoded(account)
        return "otpauth://totp/\(label)?secret=\(base32Secret)&issuer=\(percentEncoded(issuer))"
            + "&algorithm=SHA1&digits=\(Self.digits)&period=\(Self.period)"
    }

    /// The time step containing `date`.
    public static func timeStep(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// The code for `date`.
    public func code(at date: Date) throws(CryptoError) -> String {
        try Self.hotp(secret: secret, counter: UInt64(max(0, Self.timeStep(at: date))))
    }

    /// Checks `code` at `date` within ±`window` steps and returns the matching step, or nil when it does not match
    /// or matches only steps at or before `lastUsedStep` (a replay).
    ///
    /// Every candidate step is computed and compared in constant time, so timing reveals neither which step
    /// matched nor how much of the code was right.
    public func verify(_ code: String, at date: Date, lastUsedStep: Int64? = nil) throws(CryptoError) -> Int64? {
        let typed = Array(code.utf8.filter { $0 != UInt8(ascii: " ") })
        guard typed.count == Self.digits, typed.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let current = Self.timeStep(at: date)
        var matched: Int64?
        for step in (current - Self.window)...(current + Self.window) where step >= 0 {
            let expected = Array(try Self.hotp(secret: secret, counter: UInt64(step)).utf8)
            if ConstantTime.equals(expected, typed), step > (lastUsedStep ?? -1) {
                matched = matched ?? step
            }
        }
        return matched
    }

    /// The RFC 4226 HOTP value of `counter`, `digits` long with leading zeros.
    public static func hotp(secret: [UInt8], counter: UInt64, digits: Int = TOTP.digits) throws(CryptoError) -> String {
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let mac = Digest.hmacSHA1(key: secret, message: message)
        // Dynamic truncation (RFC 4226 §5.3).
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// RFC 3986 percent-encoding of everything but unreserved characters, so ':' '@' '&' and spaces in an issuer
    /// or account name can't break the label or the query.
    private func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}
