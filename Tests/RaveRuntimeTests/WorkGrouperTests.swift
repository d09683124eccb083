import RaveRuntime
import RaveTestSupport
import Synchronization
import Testing

@Suite("Grouped work: inputs that arrive while a group runs go together into the next")
struct WorkGrouperTests {
    /// Work whose first `gated` groups wait for a gate each; group number `failing` throws, group number
    /// `miscounting` answers one output too few.
    final class GatedWork: Sendable {
        let gates: [ShutdownLatch]
        let groups = Mutex<[[Int]]>([])
        let failing: Int?
        let miscounting: Int?

        init(gated: Int, failing: Int? = nil, miscounting: Int? = nil) {
            gates = (0..<gated).map { _ in ShutdownLatch() }
            self.failing = failing
            self.miscounting = miscounting
        }

        struct Failed: Error, Equatable {}

        func run(_ inputs: [Int]) async throws -> [String] {
            let number = groups.withLock { groups in
                groups.append(inputs)
                return groups.count
            }
            if number <= gates.count { await gates[number - 1].wait() }
            if number == failing { throw Failed() }
            let outputs = inputs.map { "answer \($0)" }
            return number == miscounting ? Array(outputs.dropLast()) : outputs
        }

        var recorded: [[Int]] { groups.withLock { $0 } }
    }

    @Test func everyInputGetsItsOwnOutputAndLaterOnesShareTheNextGroup() async throws {
        let work = GatedWork(gated: 1)
        let grouper = WorkGrouper<Int, String> { try await work.run($0) }
        let first = Task { try await grouper.submit(0) }
        try await eventually { work.recorded.count == 1 }
        let later = (1...5).map { input in Task { try await grouper.submit(input) } }
        try await eventually { grouper.queued == 5 }
        #expect(grouper.unanswered == 6)
        work.gates[0].open()
        #expect(try await first.value == "answer 0")
        for (input, task) in zip(1...5, later) { #expect(try await task.value == "answer \(input)") }
        #expect(work.recorded.map { $0.sorted() } == [[0], [1, 2, 3, 4, 5]])
        #expect(grouper.unanswered == 0)
    }

    @Test func aFailedGroupFailsEachOfItsInputsAndTheNextGroupStillRuns() async throws {
        let work = GatedWork(gated: 1, failing: 1)
        let grouper = WorkGrouper<Int, String> { try await work.run($0) }
        let failed = Task { try await grouper.submit(0) }
        try await eventually { work.recorded.count == 1 }
        let queued = Task { try await grouper.submit(1) }
        try await eventually { grouper.queued == 1 }
        work.gates[0].open()
        await #expect(throws: GatedWork.Failed.self) { try await failed.value }
        #expect(try await queued.value == "answer 1")
    }

    @Test func workAnsweringAnotherNumberOfOutputsFailsItsGroup() async throws {
        let work = GatedWork(gated: 0, miscounting: 1)
        let grouper = WorkGrouper<Int, String> { try await work.run($0) }
        await #expect(throws: WorkGrouperError.self) { try await grouper.submit(7) }
        #expect(try await grouper.submit(8) == "answer 8")
    }

    @Test func aSecondGroupStartsBesideARunningOneOnlyOnceEnoughInputsWait() async throws {
        let work = GatedWork(gated: 2)
        let grouper = WorkGrouper<Int, String>(maximumConcurrentGroups: 2, minimumConcurrentGroup: 3) {
            try await work.run($0)
        }
        let first = Task { try await grouper.submit(0) }
        try await eventually { work.recorded.count == 1 }
        let two = (1...2).map { input in Task { try await grouper.submit(input) } }
        try await eventually { grouper.queued == 2 }
        #expect(work.recorded.count == 1, "two waiting inputs do not start a second group")
        let third = Task { try await grouper.submit(3) }
        try await eventually { work.recorded.count == 2 }
        #expect(work.recorded[1].sorted() == [1, 2, 3])
        work.gates[1].open()
        work.gates[0].open()
        #expect(try await first.value == "answer 0")
        for (input, task) in zip(1...2, two) { #expect(try await task.value == "answer \(input)") }
        #expect(try await third.value == "answer 3")
    }

    @Test func aFullGroupStartsEvenAboveTheLimit() async throws {
        let work = GatedWork(gated: 1)
        let grouper = WorkGrouper<Int, String>(maximumGroup: 3) { try await work.run($0) }
        let first = Task { try await grouper.submit(0) }
        try await eventually { work.recorded.count == 1 }
        let full = (1...3).map { input in Task { try await grouper.submit(input) } }
        try await eventually { work.recorded.count == 2 }
        for (input, task) in zip(1...3, full) { #expect(try await task.value == "answer \(input)") }
        work.gates[0].open()
        #expect(try await first.value == "answer 0")
    }
}
