import Foundation
import Testing

@testable import RavePostgres

/// The one days-to-civil conversion (the bulk loader's text and the export records' times both use it).
@Suite struct ISODateTests {
    /// Every day from 1600 to 2400 (leap centuries, 1970 itself, negative day counts) against Foundation's calendar.
    @Test func civilDatesMatchTheGregorianCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        for days in stride(from: Int64(-135_140), through: 157_000, by: 1) {
            let date = Date(timeIntervalSince1970: TimeInterval(days) * 86_400)
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            let civil = ISODate.civil(daysSinceEpoch: days)
            guard civil.year == Int64(parts.year ?? 0), civil.month == Int64(parts.month ?? 0),
                civil.day == Int64(parts.day ?? 0)
            else {
                Issue.record("day \(days): \(civil) but the calendar says \(parts)")
                return
            }
        }
        #expect(ISODate.civil(daysSinceEpoch: 0) == (1970, 1, 1))
        #expect(ISODate.civil(daysSinceEpoch: -1) == (1969, 12, 31))
        #expect(ISODate.civil(daysSinceEpoch: 11_016) == (2000, 2, 29))
    }
}
