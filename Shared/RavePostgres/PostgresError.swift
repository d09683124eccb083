/// A failure talking to PostgreSQL.
public struct PostgresError: Error, Sendable {
    public var message: String

    public init(message: String) {
        self.message = message
    }
}
