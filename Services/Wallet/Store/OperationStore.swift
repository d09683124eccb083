import RavePostgres

/// Operator money movements by operation id, so a repeated operation is answered with its first result.
struct OperationStore: Sendable {
    static let selectOperation = PostgresStatement(
        name: "wallet_select_operation",
        sql: "SELECT kind, request_hash, result FROM operator_operations WHERE operation_id = $1")
    static let insertOperation = PostgresStatement(
        name: "wallet_insert_operation",
        sql: "INSERT INTO operator_operations (operation_id, kind, request_hash, result) VALUES ($1, $2, $3, $4)")

    /// A recorded operation: the hash of the request it answered and its encoded response.
    struct Operation: Sendable {
        var requestHash: String
        var result: [UInt8]
    }

    /// The operation recorded under `id`, nil when there is none.
    func operation(_ id: String, on database: some PostgresQueryable) async throws -> Operation? {
        guard let row = try await database.execute(Self.selectOperation, [id]).first else { return nil }
        return Operation(requestHash: try row.decode(String.self, at: 1), result: try row.decode([UInt8].self, at: 2))
    }

    /// Records an operation in the transaction that moved its money; a second record of `id` is a unique violation.
    func record(
        _ id: String, kind: String, requestHash: String, result: [UInt8], in transaction: PostgresTransaction
    ) async throws {
        try await transaction.execute(Self.insertOperation, [id, kind, requestHash, result])
    }
}
