import Foundation
import RaveJSON
import Testing

@Suite("JSON string escaping")
struct JSONStringTests {
    /// What a JSON parser reads back from `literal`.
    private func parsed(_ literal: String) throws -> String {
        try #require(
            try JSONSerialization.jsonObject(with: Data(literal.utf8), options: [.fragmentsAllowed]) as? String)
    }

    @Test func plainTextIsOnlyQuoted() {
        #expect(JSONString.quoted("hello, world / 42") == #""hello, world / 42""#)
        #expect(JSONString.quoted("") == #""""#)
    }

    @Test func quoteAndBackslashAreEscaped() {
        #expect(JSONString.quoted(#"say "hi" \ there"#) == #""say \"hi\" \\ there""#)
        #expect(JSONString.quoted(#"\""#) == #""\\\"""#)
    }

    @Test func lineFeedCarriageReturnAndTabUseTheirShortForms() {
        #expect(JSONString.quoted("a\nb\rc\td") == #""a\nb\rc\td""#)
        #expect(JSONString.quoted("\r\n") == #""\r\n""#)
    }

    @Test func everyOtherControlCharacterAndDELAreFourDigitLowerCaseHex() {
        #expect(JSONString.quoted("\u{0}") == #""\u0000""#)
        #expect(JSONString.quoted("\u{8}\u{C}") == #""\u0008\u000c""#)
        #expect(JSONString.quoted("\u{1B}[31m") == #""\u001b[31m""#)
        #expect(JSONString.quoted("\u{1F}") == #""\u001f""#)
        #expect(JSONString.quoted("\u{7F}") == #""\u007f""#)
    }

    @Test func noRawControlByteIsLeftAndEveryControlCharacterReadsBack() throws {
        let controls = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init) + ["\u{7F}"]))
        let literal = JSONString.quoted(controls)
        #expect(!literal.utf8.contains { $0 < 0x20 || $0 == 0x7F })
        #expect(try parsed(literal) == controls)
    }

    @Test func nonASCIIIsWrittenAsItsUTF8Bytes() throws {
        let text = "é ü 漢字 😀 👩‍👩‍👧 \u{85} \u{202E}"
        #expect(JSONString.quotedBytes(text) == Array("\"\(text)\"".utf8))
        #expect(try parsed(JSONString.quoted(text)) == text)
    }

    /// U+2028 and U+2029 are valid inside a JSON string (RFC 8259 only requires escaping C0 controls), so they stay.
    @Test func lineAndParagraphSeparatorsStayAsTheyAre() throws {
        #expect(JSONString.quoted("a\u{2028}b\u{2029}c") == "\"a\u{2028}b\u{2029}c\"")
        #expect(try parsed(JSONString.quoted("a\u{2028}b\u{2029}c")) == "a\u{2028}b\u{2029}c")
    }

    /// Bytes that were not valid UTF-8 became U+FFFD when the string was made, so the literal is valid UTF-8.
    @Test func textDecodedFromInvalidUTF8StaysValidUTF8() throws {
        let text = String(decoding: [0x61, 0xFF, 0xC3, 0x22, 0xED, 0xA0, 0x80, 0x62] as [UInt8], as: UTF8.self)
        let literal = JSONString.quotedBytes(text)
        #expect(String(validating: literal, as: UTF8.self) != nil)
        #expect(try parsed(String(decoding: literal, as: UTF8.self)) == text)
        #expect(text.contains("\u{FFFD}"))
    }

    @Test func theStringAndByteFormsAgree() {
        let texts = ["", "plain", "q\"b\\", "\u{0}\u{1}\n\t\u{7F}", "漢字😀", "\u{2028}", "mixed \"é\"\n\u{1F}end"]
        for text in texts {
            #expect(JSONString.quotedBytes(text) == Array(JSONString.quoted(text).utf8), "\(text.debugDescription)")
            var bytes: [UInt8] = [UInt8(ascii: "[")]
            JSONString.append(text, to: &bytes)
            #expect(bytes == [UInt8(ascii: "[")] + JSONString.quotedBytes(text))
        }
    }

    @Test func aSubstringIsQuotedLikeTheStringItShows() {
        let text = "key=\"value\"\n"
        let value = text.dropFirst(4)
        #expect(JSONString.quoted(value) == JSONString.quoted(String(value)))
        #expect(JSONString.quoted(value) == #""\"value\"\n""#)
    }

    /// Every scalar of the first 256 and a sample above reads back unchanged through a JSON parser.
    @Test func everyLatin1ScalarAndASampleBeyondRoundTrip() throws {
        let scalars =
            (0..<0x100).compactMap(Unicode.Scalar.init)
            + [0x7FF, 0x800, 0xD7FF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF].compactMap(
                Unicode.Scalar.init)
        for scalar in scalars {
            let text = "<" + String(scalar) + ">"
            #expect(try parsed(JSONString.quoted(text)) == text, "U+\(String(scalar.value, radix: 16))")
        }
    }
}
