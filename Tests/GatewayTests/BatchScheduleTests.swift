import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// When a batch's calls run, decided without running anything.
@Suite("Batch schedule")
struct BatchScheduleTests {
    private func schedule(_ calls: [GatewayV1.BatchCall]) throws -> BatchSchedule {
        BatchSchedule(plan: try BatchPlan(BatchTests.batch(calls)))
    }

    private func ok(_ name: String, _ response: String = "") -> GatewayV1.BatchResult {
        var result = GatewayV1.BatchResult()
        result.name = name
        result.response = Array(response.utf8)
        return result
    }

    private func failed(_ name: String) -> GatewayV1.BatchResult {
        GatewayV1.BatchResult(name: name, error: .notFound("no such board"))
    }

    @Test func independentCallsAreReadyAtOnceAndHandedOutOnce() throws {
        var schedule = try schedule([BatchTests.call("a"), BatchTests.call("b"), BatchTests.call("c")])
        #expect(schedule.readyCalls().map(\.name) == ["a", "b", "c"])
        #expect(schedule.readyCalls().isEmpty)
        #expect(!schedule.isComplete)
        for (index, name) in ["a", "b", "c"].enumerated() { schedule.record(ok(name), at: index) }
        #expect(schedule.isComplete)
    }

    @Test func aCallWaitsForEveryDependencyAndSeesTheirResponses() throws {
        var schedule = try schedule([
            BatchTests.call("a"), BatchTests.call("b"), BatchTests.call("c", dependsOn: ["a", "b"]),
        ])
        #expect(schedule.readyCalls().map(\.name) == ["a", "b"])
        schedule.record(ok("a", "A"), at: 0)
        #expect(schedule.readyCalls().isEmpty)
        schedule.record(ok("b", "B"), at: 1)
        let ready = schedule.readyCalls()
        #expect(ready.map(\.name) == ["c"])
        #expect(schedule.responses(for: ready[0]) == [0: Array("A".utf8), 1: Array("B".utf8)])
    }

    @Test func aFailureSkipsItsDependantsAndTheirsInOneStep() throws {
        var schedule = try schedule([
            BatchTests.call("a"), BatchTests.call("b", dependsOn: ["a"]), BatchTests.call("c", dependsOn: ["b"]),
            BatchTests.call("d"),
        ])
        #expect(schedule.readyCalls().map(\.name) == ["a", "d"])
        schedule.record(failed("a"), at: 0)
        #expect(schedule.readyCalls().isEmpty)
        schedule.record(ok("d"), at: 3)
        #expect(schedule.isComplete)
        let results = schedule.response.results
        #expect(results.map(\.name) == ["a", "b", "c", "d"])
        #expect(results[0].code == .notFound && !results[0].dependencyFailed)
        #expect(results[1].code == .aborted && results[1].dependencyFailed)
        #expect(results[1].message == "\(BatchSchedule.dependencyFailedMessage) (\"a\")")
        #expect(results[2].message == "\(BatchSchedule.dependencyFailedMessage) (\"b\")")
        #expect(results[3].code == .ok)
    }

    @Test func theFirstFailedDependencyIsNamed() throws {
        var schedule = try schedule([
            BatchTests.call("a"), BatchTests.call("b"), BatchTests.call("c", dependsOn: ["a", "b"]),
        ])
        _ = schedule.readyCalls()
        schedule.record(failed("b"), at: 1)
        _ = schedule.readyCalls()
        #expect(schedule.results[2]?.message.hasSuffix("(\"b\")") == true)
        schedule.record(failed("a"), at: 0)
        #expect(schedule.isComplete)
    }

    @Test func aSecondResultForACallIsIgnored() throws {
        var schedule = try schedule([BatchTests.call("a"), BatchTests.call("b")])
        _ = schedule.readyCalls()
        schedule.record(ok("a", "first"), at: 0)
        schedule.record(failed("a"), at: 0)
        #expect(!schedule.isComplete)
        #expect(schedule.results[0]?.response == Array("first".utf8))
    }
}
