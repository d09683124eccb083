import Foundation
import RaveMessages

/// Checks the fields of a token registration, so bad input is refused with a message saying what is allowed.
enum TokenValidation {
    /// Longest token accepted: APNs tokens are 64 hex digits and FCM tokens about 160 characters today, but both
    /// providers reserve the right to grow them.
    static let maximumTokenLength = 4096

    /// The platform, or INVALID_ARGUMENT for unspecified and unknown values.
    static func platform(_ platform: PushV1.Platform) throws(PushError) -> PushV1.Platform {
        switch platform {
        case .apns, .fcm: return platform
        case .unspecified: throw .invalidArgument("platform is required: PLATFORM_APNS or PLATFORM_FCM")
        case .unrecognized(let value):
            throw .invalidArgument("unknown platform \(value): use PLATFORM_APNS (1) or PLATFORM_FCM (2)")
        }
    }

    static func token(_ token: String) throws(PushError) -> String {
        guard !token.isEmpty else { throw .invalidArgument("token must not be empty") }
        guard token.utf8.count <= maximumTokenLength else {
            throw .invalidArgument("token must be at most \(maximumTokenLength) bytes, got \(token.utf8.count)")
        }
        guard token.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .invalidArgument("token must be printable ASCII without spaces")
        }
        return token
    }

    /// An IANA zone name the system's tz database knows ("Asia/Seoul", "UTC").
    static func timeZone(_ name: String) throws(PushError) -> TimeZone {
        guard !name.isEmpty else { throw .invalidArgument("time_zone is required (an IANA name like Europe/Paris)") }
        // TimeZone(identifier:) also accepts abbreviations and offsets ("GMT+3"); insist on a database name.
        guard name.contains("/") || name == "UTC" || name == "GMT", let zone = TimeZone(identifier: name) else {
            throw .invalidArgument("time_zone \"\(name)\" is not an IANA time zone name (like Europe/Paris)")
        }
        return zone
    }

    /// ISO 3166-1 alpha-2 in upper case, or empty for unknown.
    static func country(_ code: String) throws(PushError) -> String {
        if code.isEmpty { return code }
        guard code.utf8.count == 2, code.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }),
            knownRegions.contains(code)
        else {
            throw .invalidArgument("country \"\(code)\" is not an ISO 3166-1 alpha-2 code (like KR or US)")
        }
        return code
    }

    /// A BCP 47 tag of an ISO 639 language, optional script and region ("en", "pt-BR", "zh-Hant-TW"), or empty.
    static func language(_ tag: String) throws(PushError) -> String {
        if tag.isEmpty { return tag }
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        let problem = PushError.invalidArgument(
            "language \"\(tag)\" is not a BCP 47 language tag (like en, pt-BR or zh-Hant-TW)")
        guard let primary = parts.first, knownLanguages.contains(primary), parts.count <= 3 else { throw problem }
        for part in parts.dropFirst() {
            let letters = part.allSatisfy { $0.isASCII && $0.isLetter }
            let isScript = part.count == 4 && letters && part.first?.isUppercase == true
            let isRegion =
                (part.count == 2 && letters && part == part.uppercased())
                || (part.count == 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber))
            guard isScript || isRegion else { throw problem }
        }
        return tag
    }

    private static let knownRegions: Set<String> = Set(
        Locale.Region.isoRegions.map(\.identifier).filter { $0.count == 2 })
    private static let knownLanguages: Set<String> = Set(
        Locale.LanguageCode.isoLanguageCodes.map(\.identifier).filter { $0.count == 2 || $0.count == 3 })
}
