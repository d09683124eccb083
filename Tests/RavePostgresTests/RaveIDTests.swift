import RavePostgres
import Testing

/// Parsing ids from text: both spellings, both string kinds, and everything else refused.
@Suite struct RaveIDTests {
    @Test func canonicalAndBareHexParseToTheSameID() throws {
        let id = RaveID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
        #expect(RaveID("01234567-89ab-cdef-fedc-ba9876543210") == id)
        #expect(RaveID("0123456789abcdeffedcba9876543210") == id)
        #expect(RaveID("0123456789ABCDEFFEDCBA9876543210") == id)
        #expect(RaveID("x01234567-89ab-cdef-fedc-ba9876543210".dropFirst()) == id)
        let random = RaveID.random()
        #expect(RaveID(random.description) == random)
        #expect(RaveID(random.hex) == random)
    }

    @Test func anythingElseIsRefused() {
        for text in [
            "", "0123456789abcdeffedcba987654321", "0123456789abcdeffedcba98765432100",
            "0123456789abcdeffedcba987654321g", "01234567-89ab-cdef-fedcba9876543210",
            "01234567-89ab-cdef-fedc-ba98-76543210", "{01234567-89ab-cdef-fedc-ba9876543210}",
            "01234567 89ab cdef fedc ba9876543210",
        ] {
            #expect(RaveID(text) == nil, "\(text)")
            #expect(RaveID(Substring(text)) == nil, "\(text) as a substring")
        }
    }
}
