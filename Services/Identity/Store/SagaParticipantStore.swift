import Foundation
import RavePostgres
import RaveRPC

/// The participants a saga (a merge, an account deletion) waits for: one row per participant service, with its
/// attempts, its last error and when it acknowledged (`merge_participants`, `account_deletion_participants`).
///
/// Both sagas deliver through the outbox the same way (`MergeDelivery`); this is the bookkeeping they share.
struct SagaParticipantStore: Sendable {
    /// A saga's participant table, with the statements that record its participants' answers.
    struct Table: Sendable {
        let acknowledge: PostgresStatement
        let recordFailure: PostgresStatement
        /// Select-list columns over the saga's table aliased `m` (its id `m.id`): `acknowledged` and `pending`,
        /// the participant names in order.
        let answerColumns: String

        init(table: String, sagaColumn: String, statementPrefix: String) {
            acknowledge = PostgresStatement(
                name: "\(statementPrefix)_acknowledge",
                sql: """
                    UPDATE \(table) SET acknowledged_at = now(), attempts = attempts + 1, last_error = NULL
                    WHERE \(sagaColumn) = $1 AND participant = $2 AND acknowledged_at IS NULL
                    """)
            recordFailure = PostgresStatement(
                name: "\(statementPrefix)_record_failure",
                sql: """
                    UPDATE \(table) SET attempts = attempts + 1, last_error = left($3, 500)
                    WHERE \(sagaColumn) = $1 AND participant = $2 AND acknowledged_at IS NULL
                    """)
            answerColumns = """
                ARRAY(SELECT p.participant FROM \(table) p
                    WHERE p.\(sagaColumn) = m.id AND p.acknowledged_at IS NOT NULL ORDER BY p.participant)
                    AS acknowledged,
                ARRAY(SELECT p.participant FROM \(table) p
                    WHERE p.\(sagaColumn) = m.id AND p.acknowledged_at IS NULL ORDER BY p.participant) AS pending
                """
        }
    }

    static let merges = Table(table: "merge_participants", sagaColumn: "merge_id", statementPrefix: "identity_merge")
    static let deletions = Table(
        table: "account_deletion_participants", sagaColumn: "deletion_id", statementPrefix: "identity_deletion")

    let database: any PostgresQueryable
    let table: Table

    /// Records the participant's acknowledgement (once; a repeat changes nothing).
    func acknowledge(sagaID: RaveID, participant: String) async throws {
        _ = try await database.execute(table.acknowledge, [sagaID, participant])
    }

    /// Counts a failed attempt and keeps its error (cut to 500 characters) for the saga's status.
    func recordFailure(sagaID: RaveID, participant: String, error: String) async throws {
        _ = try await database.execute(table.recordFailure, [sagaID, participant, error])
    }
}
