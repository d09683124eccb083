import RaveMessages
import RaveRPC
import RaveRuntime
import Testing

@testable import Identity

/// Identity refuses with its own error type, as every data service does, and keeps the status and words clients
/// were promised (docs/identity.md, docs/PROTOCOL.md).
@Suite("Identity's error type")
struct IdentityErrorTests {
    @Test func handlerRefusalsAreIdentityErrorsWithTheirStatusAndWording() async throws {
        try await IdentityHarness.with { harness in
            let id = String(repeating: "c", count: 32)
            await #expect(throws: IdentityError.notFound("no merge \(id)")) {
                _ = try await harness.admin.getMergeStatus(.init(mergeId: id), context: IdentityHarness.adminContext)
            }
        }
    }

    @Test func sharedRequestChecksKeepTheirWordingAsIdentityErrors() throws {
        let shared = #expect(throws: RPCError.self) { _ = try RequestChecks.raveID("ABC", field: "merge_id") }
        let own = #expect(throws: IdentityError.self) { _ = try Validation.raveID("ABC", field: "merge_id") }
        #expect(own?.code == .invalidArgument)
        #expect(own?.message == shared?.message)
        #expect(throws: IdentityError.invalidArgument("password must be 8…128 characters, got 3")) {
            _ = try Validation.password("abc")
        }
    }

    @Test func theStatusSentCarriesTheRefusalsDetailAndRetrySafety() {
        let refusal = IdentityError(
            code: .resourceExhausted, message: "at capacity", details: [1, 2, 3], notProcessed: true)
        #expect(
            refusal.rpcError == RPCError(.resourceExhausted, "at capacity", details: [1, 2, 3], notProcessed: true))
        #expect(RPCError(mapping: refusal, requestID: "r") == refusal.rpcError)
        // Text that recorded or logged an error reads as it did when identity threw RPCError.
        #expect("\(IdentityError.unavailable("down"))" == "\(RPCError.unavailable("down"))")
    }
}
