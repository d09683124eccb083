import RavePostgres
import Testing

@Suite struct RaveIDTests {
    @Test func timeOrderedIdsAreVersionSevenAndSortByCreation() async throws {
        var previous = RaveID.timeOrdered()
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(2))
            let next = RaveID.timeOrdered()
            #expect(previous < next)
            #expect(next.high >> 12 & 0xf == 7)
            #expect(next.low >> 62 == 0b10)
            previous = next
        }
    }

    @Test func timeOrderedIdsRoundTripThroughPostgres() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let id = RaveID.timeOrdered()
            let rows = try await connection.query("SELECT $1::uuid AS id", [id])
            #expect(try rows.first?.decode(RaveID.self, column: "id") == id)
        }
    }
}
