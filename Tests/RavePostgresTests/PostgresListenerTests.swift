import RavePostgres
import Testing

@Suite struct PostgresListenerTests {
    @Test func notificationsArriveOnTheirChannel() async throws {
        try await TestDatabase.with { database in
            let listener = PostgresListener(connectionString: database.url, loop: TestDatabase.group.next())
            defer { listener.shutdown() }
            let stream = try await listener.notifications(channel: "score_updates")
            let sender = try await database.connect()
            defer { sender.close() }
            try await sender.query("SELECT pg_notify('other_channel', 'ignored')")
            try await sender.query("SELECT pg_notify('score_updates', $1)", ["board-7"])
            var iterator = stream.makeAsyncIterator()
            let received = await iterator.next()
            #expect(received?.channel == "score_updates" && received?.payload == "board-7")
        }
    }
}
