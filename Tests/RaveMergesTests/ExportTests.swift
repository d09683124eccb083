import Foundation
import RavePostgres
import Testing

@testable import RaveMerges

@Suite("Export helpers")
struct ExportHelperTests {
    private func object(_ record: ExportRecord) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(record.json)) as? [String: Any])
    }

    /// Quotes, backslashes, every control character, DEL and non-ASCII text survive a JSON parser unchanged, and
    /// no raw control byte is left in the record.
    @Test func recordEscapesQuotesControlCharactersAndKeepsUnicode() throws {
        let controls = String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}"
        let texts = ["plain", "say \"hi\" \\ there /", controls, "é ü 漢字 😀 \u{2028}\u{2029}", ""]
        var record = ExportRecord()
        for (index, text) in texts.enumerated() { record.string("text_\(index)", text) }
        record.string("key \"with\" quote\n", "value")
        #expect(!record.json.contains { $0 < 0x20 || $0 == 0x7F })
        let parsed = try object(record)
        for (index, text) in texts.enumerated() { #expect(parsed["text_\(index)"] as? String == text) }
        #expect(parsed["key \"with\" quote\n"] as? String == "value")
        var small = ExportRecord()
        small.string("k", "a\"b\\c\n\u{1}\u{7F}")
        #expect(String(decoding: small.json, as: UTF8.self) == #"{"k":"a\"b\\c\n\u0001\u007f"}"#)
    }

    /// Each kind of field in the documented form: ids as hex, int64 as decimal strings, small ints as numbers,
    /// bytes as base64, times as RFC 3339 with milliseconds, NULL as null.
    @Test func recordWritesEachFieldKindInTheDocumentedForm() throws {
        let id = RaveID.random()
        var record = ExportRecord()
        record.id("id", id)
        record.id("missing", nil)
        record.int64("amount", .max)
        record.int64("negative", -5)
        record.int("count", 42)
        record.bool("flag", true)
        record.bytes("bytes", [0, 1, 2, 255])
        record.enumeration("state", "pending")
        record.strings("list", ["a", "b\""])
        record.stringMap("map", [("k", "v"), ("q\"", "w")])
        record.time("at", PostgresTimestamp(microsecondsSinceEpoch: 1_796_183_100_123_456))
        let text = String(decoding: record.json, as: UTF8.self)
        #expect(text.contains(#""amount":"9223372036854775807""#) && text.contains(#""count":42"#))
        #expect(text.contains(#""missing":null"#))
        let parsed = try object(record)
        #expect(parsed["id"] as? String == id.hex)
        #expect(parsed["negative"] as? String == "-5")
        #expect(parsed["flag"] as? Bool == true)
        #expect(parsed["bytes"] as? String == "AAEC/w==")
        #expect(parsed["state"] as? String == "pending")
        #expect(parsed["list"] as? [String] == ["a", "b\""])
        #expect(parsed["map"] as? [String: String] == ["k": "v", "q\"": "w"])
        #expect(parsed["at"] as? String == "2026-12-02T03:45:00.123Z")
        #expect(try object(ExportRecord()).isEmpty)
    }

    /// Times across the epoch, leap days and centuries match Foundation's formatter; milliseconds round down.
    @Test func timesAreRFC3339UTCWithMilliseconds() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let samples: [Int64] = [
            0, 999, -1, -1_000_001, 951_782_400_000_000, 4_107_542_399_999_999, -2_208_988_800_000_000,
            1_709_208_000_500_999, 253_402_300_799_999_000,
        ]
        for micros in samples {
            let floored = Int64((Double(micros) / 1000).rounded(.down)) * 1000
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(floored) / 1_000_000))
            #expect(ExportRecord.rfc3339(PostgresTimestamp(microsecondsSinceEpoch: micros)) == expected)
        }
        #expect(ExportRecord.rfc3339(.infinity) == "infinity")
    }

    /// A cursor reads back as written, text keys with any character included; anything else is refused as one
    /// INVALID_ARGUMENT.
    @Test func cursorRoundTripsAndRefusesGarbage() throws {
        let keys = [["1", RaveID.random().hex], ["a.b\"c\n\u{1}é😀", ""], []]
        for key in keys {
            let cursor = ExportCursor(section: "friend_requests", key: key)
            #expect(try ExportCursor(cursor.text) == cursor)
        }
        for garbage in ["", "x", "2.friends", "1.", "1.Friends", "1.friends.%%%", "1.friends./w==", "1.fr iends"] {
            #expect(throws: ExportError.badCursor) { try ExportCursor(garbage) }
        }
        #expect(throws: ExportError.badCursor) { try ExportCursor("1.friends." + String(repeating: "A", count: 5000)) }
    }

    /// The request's checks: export id 1…128 bytes, ids in the wire form, at most 1000 merged ids (the user and
    /// repeats dropped), the cursor read.
    @Test func requestIsCheckedLikeAnErasure() throws {
        let user = RaveID.random().hex
        let merged = RaveID.random().hex
        let export = try UserExport(
            exportID: "e", userID: user, mergedUserIDs: [merged, user, merged], cursor: "1.blocks")
        #expect(export.mergedIDs.map(\.hex) == [merged])
        #expect(export.cursor == ExportCursor(section: "blocks", key: []))
        #expect(try UserExport(exportID: "e", userID: user, mergedUserIDs: [], cursor: "").cursor == nil)
        let refusals: [(String, String, [String], String, String)] = [
            ("", user, [], "", "export_id must be 1…128 bytes, got 0"),
            (String(repeating: "x", count: 129), user, [], "", "export_id must be 1…128 bytes, got 129"),
            ("e", user.uppercased(), [], "", "user_id must be a Rave ID (32 lowercase hex digits), got 32 bytes"),
            ("e", user, ["nope"], "", "merged_user_ids must be a Rave ID (32 lowercase hex digits), got 4 bytes"),
            (
                "e", user, Array(repeating: merged, count: 1001), "",
                "merged_user_ids may hold at most 1000 ids, got 1001"
            ),
            ("e", user, [], "garbage", "cursor is not a next_cursor this service returned"),
        ]
        for (exportID, userID, mergedIDs, cursor, message) in refusals {
            #expect(throws: ExportError.invalidArgument(message)) {
                try UserExport(exportID: exportID, userID: userID, mergedUserIDs: mergedIDs, cursor: cursor)
            }
        }
    }
}
