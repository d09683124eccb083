import Testing

@testable import RavePostgres

/// Array parameters written in one pass must be byte for byte what the generic array encoding sends.
@Suite struct PostgresArrayParameterTests {
    @Test func idsEncodeLikeTheGenericArray() {
        let ids = [RaveID(high: 1, low: 2), RaveID(high: .max, low: 0), RaveID.random()]
        #expect(PostgresArrayParameter(ids).postgresValue == ids.postgresValue)
        #expect(PostgresArrayParameter([RaveID]()).postgresValue == [RaveID]().postgresValue)
    }

    @Test func numbersEncodeLikeTheGenericArray() {
        let big: [Int64] = [0, -1, 42, .max, .min]
        let small: [Int32] = [0, 1, -7, .max]
        #expect(PostgresArrayParameter(big).postgresValue == big.postgresValue)
        #expect(PostgresArrayParameter(small).postgresValue == small.postgresValue)
        #expect(PostgresArrayParameter([Int64]()).postgresValue == [Int64]().postgresValue)
    }

    @Test func textsEncodeLikeTheGenericArray() {
        let texts = ["", "bet_wager", "ünïcode ✓", String(repeating: "ab", count: 300)]
        #expect(PostgresArrayParameter(texts).postgresValue == texts.postgresValue)
        #expect(PostgresArrayParameter([String]()).postgresValue == [String]().postgresValue)
    }
}
