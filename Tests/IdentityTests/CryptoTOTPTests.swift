import Foundation
import Testing

@testable import Identity

@Suite("TOTP and backup codes")
struct CryptoTOTPTests {
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test(
        arguments: zip(
            0..<10,
            ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]))
    func hotpMatchesRFC4226AppendixD(counter: Int, expected: String) throws {
        #expect(try TOTP.hotp(secret: Self.rfcSecret, counter: UInt64(counter)) == expected)
    }

    /// RFC 6238 Appendix B, SHA-1 rows: the 8-digit values truncated to their last 6 digits.
    @Test(arguments: [
        (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
        (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
    ])
    func totpMatchesRFC6238AppendixB(time: Int, eightDigits: String) throws {
        let totp = TOTP(secret: Self.rfcSecret)
        let date = Date(timeIntervalSince1970: TimeInterval(time))
        #expect(try TOTP.hotp(secret: Self.rfcSecret, counter: UInt64(time / 30), digits: 8) == eightDigits)
        #expect(try totp.code(at: date) == String(eightDigits.suffix(6)))
        #expect(try totp.verify(String(eightDigits.suffix(6)), at: date) == Int64(time / 30))
    }

    @Test func verifyAcceptsOneStepEitherSideAndNoMore() throws {
        let totp = try TOTP.generate()
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        let step = TOTP.timeStep(at: now)
        for offset in -1...1 {
            let code = try totp.code(at: now.addingTimeInterval(Double(offset) * 30))
            #expect(try totp.verify(code, at: now) == step + Int64(offset))
        }
        for offset in [-2, 2] {
            let code = try totp.code(at: now.addingTimeInterval(Double(offset) * 30))
            // A collision with a neighbouring step's code is possible in principle (1 in 10^6); skip that case.
            let neighbours = try (-1...1).map { try totp.code(at: now.addingTimeInterval(Double($0) * 30)) }
            if !neighbours.contains(code) { #expect(try totp.verify(code, at: now) == nil) }
        }
    }

    @Test func usedStepIsNotAcceptedAgain() throws {
        let totp = try TOTP.generate()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let code = try totp.code(at: now)
        let step = try #require(try totp.verify(code, at: now))
        #expect(try totp.verify(code, at: now, lastUsedStep: step) == nil)
        // Also refused 30 s later, while the code is still inside the window.
        #expect(try totp.verify(code, at: now.addingTimeInterval(30), lastUsedStep: step) == nil)
        // An older code can't be used once a newer one has been.
        let previous = try totp.code(at: now.addingTimeInterval(-30))
        if previous != code { #expect(try totp.verify(previous, at: now, lastUsedStep: step) == nil) }
        // The next step's code is fine.
        let next = try totp.code(at: now.addingTimeInterval(30))
        #expect(try totp.verify(next, at: now.addingTimeInterval(30), lastUsedStep: step) == step + 1)
    }

    @Test(arguments: ["", "12345", "1234567", "abcdef", "12 34 5", "１２３４５６", "-12345"])
    func malformedCodesAreRejected(code: String) throws {
        #expect(try TOTP(secret: Self.rfcSecret).verify(code, at: Date()) == nil)
    }

    @Test func codeWithSpacesIsAccepted() throws {
        let totp = TOTP(secret: Self.rfcSecret)
        let date = Date(timeIntervalSince1970: 59)
        #expect(try totp.verify("287 082", at: date) == 1)
    }

    @Test func generatedSecretIsTwentyBytesAndRoundTripsThroughBase32() throws {
        let totp = try TOTP.generate()
        #expect(totp.secret.count == 20)
        #expect(totp.base32Secret.count == 32)
        #expect(!totp.base32Secret.contains("="))
        #expect(TOTP(base32Secret: totp.base32Secret) == totp)
        #expect(TOTP(base32Secret: totp.base32Secret.lowercased()) == totp)
        #expect(try TOTP.generate() != totp)
        #expect(TOTP(base32Secret: "not base32!") == nil)
        #expect(TOTP(base32Secret: "") == nil)
    }

    @Test func provisioningURLIsPercentEncoded() {
        let totp = TOTP(secret: Self.rfcSecret)
        let url = totp.provisioningURL(issuer: "Rave Games", account: "ada+1@example.com")
        #expect(
            url
                == "otpauth://totp/Rave%20Games:ada%2B1%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
                + "&issuer=Rave%20Games&algorithm=SHA1&digits=6&period=30")
        #expect(URL(string: url) != nil)
    }

    // MARK: - Backup codes

    @Test func backupCodesAreTenDistinctFormattedCodes() throws {
        let codes = try BackupCodes.generate()
        #expect(codes.count == 10)
        #expect(Set(codes).count == 10)
        for code in codes {
            #expect(code.count == 11)
            #expect(Array(code)[5] == "-")
            #expect(code.allSatisfy { "23456789abcdefghjkmnpqrstuvwxyz-".contains($0) })
        }
    }

    @Test func backupCodeMatchesItsHashWhateverTheFormatting() throws {
        let codes = try BackupCodes.generate()
        let hashes = try codes.map { try #require(BackupCodes.hash($0)) }
        #expect(hashes.allSatisfy { $0.count == 32 })
        #expect(BackupCodes.matchingIndex(of: codes[3], in: hashes) == 3)
        let retyped = codes[7].uppercased().replacingOccurrences(of: "-", with: " ")
        #expect(BackupCodes.matchingIndex(of: retyped, in: hashes) == 7)
        #expect(BackupCodes.matchingIndex(of: codes[7].replacingOccurrences(of: "-", with: ""), in: hashes) == 7)
    }

    @Test(arguments: ["", "abcde-fghj", "abcde-fghjkm", "abcde-fghj0", "abcde-fghjl", "abcde_fghjk"])
    func malformedBackupCodesAreRejected(code: String) throws {
        #expect(BackupCodes.hash(code) == nil)
        let hashes = try BackupCodes.generate().map { try #require(BackupCodes.hash($0)) }
        #expect(BackupCodes.matchingIndex(of: code, in: hashes) == nil)
    }

    @Test func unknownBackupCodeDoesNotMatch() throws {
        let hashes = try BackupCodes.generate().map { try #require(BackupCodes.hash($0)) }
        let other = try BackupCodes.generate()
        #expect(other.allSatisfy { BackupCodes.matchingIndex(of: $0, in: hashes) == nil })
        #expect(BackupCodes.matchingIndex(of: other[0], in: []) == nil)
    }
}
