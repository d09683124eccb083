import RaveMessages
import Testing

/// An encode's arena takes its thread's spare first block and gives it back (`ProtoArena`): encodes of every size,
/// one after another and on many threads at once, must each write exactly their own message.
@Suite struct ArenaReuseTests {
    /// A request whose encoding needs about `size` bytes of arena memory (its payload is copied there).
    private func request(size: Int, mark: UInt8) -> RpcV1.Request {
        RpcV1.Request(
            method: "m/\(mark)", timeoutMs: UInt32(size), metadata: ["k": String(repeating: "v", count: size % 97)],
            payload: [UInt8](repeating: mark, count: size))
    }

    /// Sizes below, at and far above the first block's 1,000 bytes, so chains of one block and of several alternate.
    private let sizes = [0, 1, 40, 900, 983, 1000, 1100, 5000, 70_000, 12, 2500, 1]

    @Test func encodesOfMixedSizesInTurnEachWriteTheirOwnMessage() throws {
        for round in 0..<3 {
            for (index, size) in sizes.enumerated() {
                let message = request(size: size, mark: UInt8(truncatingIfNeeded: round * 31 + index))
                #expect(try RpcV1.Request(protobufBytes: message.protobufBytes()) == message)
            }
        }
    }

    @Test func encodesOnManyThreadsAtOnceEachWriteTheirOwnMessage() async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var intact = true
                    for round in 0..<50 {
                        let size = sizes[(task + round) % sizes.count]
                        let message = request(size: size, mark: UInt8(truncatingIfNeeded: task * 7 + round))
                        intact = try RpcV1.Request(protobufBytes: message.protobufBytes()) == message && intact
                    }
                    return intact
                }
            }
            for try await intact in group { #expect(intact) }
        }
    }
}
