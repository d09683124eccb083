import RaveDynamic
import RaveMessages
import RaveRPC

/// A validated batch: every name unique, every dependency and reference pointing at an earlier call.
///
/// Built before anything runs; any violation makes the whole batch INVALID_ARGUMENT with a message naming the
/// call and the rule. Dependencies include the calls that references read from.
struct BatchPlan: Sendable {
    /// One call, with its dependencies resolved to indices of earlier calls.
    struct Step: Sendable {
        var index: Int
        var name: String
        var method: String
        var request: [UInt8]
        /// Earlier calls that must succeed first (depends_on and reference sources), ascending, unique.
        var dependencies: [Int]
        /// Values to copy into the request, from responses of earlier calls, in the order given.
        var references: [Reference]
    }

    /// A `FieldReference` with both paths checked against the two methods' message types.
    struct Reference: Sendable {
        /// The index of the call whose response is read.
        var source: Int
        var from: ResolvedFieldPath
        var to: ResolvedFieldPath
    }

    static let maximumCalls = 50
    static let maximumNameLength = 64
    static let batchMethod = "rave.gateway.v1.Gateway/Batch"

    let steps: [Step]

    /// Each call's method and request size, for `Protection.admit`.
    var callSizes: LazyMapSequence<[Step], (method: String, bytes: Int)> {
        steps.lazy.map { (method: $0.method, bytes: $0.request.count) }
    }

    /// Validates `request`; reference paths are resolved against the message types `registry` knows.
    init(_ request: GatewayV1.BatchRequest, registry: DescriptorRegistry = .shared) throws(RPCError) {
        let calls = request.calls
        guard (1...Self.maximumCalls).contains(calls.count) else {
            throw .invalidArgument("a batch holds 1…\(Self.maximumCalls) calls, got \(calls.count)")
        }
        var indexByName: [String: Int] = [:]
        for (index, call) in calls.enumerated() {
            guard (1...Self.maximumNameLength).contains(call.name.count) else {
                throw .invalidArgument(
                    "call \(index + 1) needs a name of 1…\(Self.maximumNameLength) characters, got \(call.name.count)")
            }
            if let earlier = indexByName[call.name] {
                throw .invalidArgument(
                    "calls \(earlier + 1) and \(index + 1) are both named \"\(call.name)\"; names must be unique")
            }
            indexByName[call.name] = index
        }
        var steps: [Step] = []
        for (index, call) in calls.enumerated() {
            guard !call.method.isEmpty else { throw .invalidArgument("call \"\(call.name)\" has no method") }
            guard call.method != Self.batchMethod else {
                throw .invalidArgument("call \"\(call.name)\" is a Batch; batches cannot nest")
            }
            var dependencies: Set<Int> = []
            let sources =
                call.dependsOn.map { ($0, "depends on") } + call.references.map { ($0.fromCall, "references") }
            for (target, relation) in sources {
                guard let dependency = indexByName[target] else {
                    throw .invalidArgument("call \"\(call.name)\" \(relation) \"\(target)\", which is not in the batch")
                }
                if dependency >= index {
                    throw .invalidArgument(Self.orderViolation(from: index, to: dependency, calls: calls, relation))
                }
                dependencies.insert(dependency)
            }
            var references: [Reference] = []
            for reference in call.references {
                guard let source = indexByName[reference.fromCall] else { continue }
                references.append(
                    try Self.resolve(reference, source: source, calls: calls, index: index, registry: registry))
            }
            steps.append(
                Step(
                    index: index, name: call.name, method: call.method, request: call.request,
                    dependencies: dependencies.sorted(), references: references))
        }
        self.steps = steps
    }

    /// The message for a dependency on a call that does not come earlier: a cycle when the later call leads
    /// back, else a forward reference.
    private static func orderViolation(
        from index: Int, to dependency: Int, calls: [GatewayV1.BatchCall], _ relation: String
    ) -> String {
        let name = calls[index].name
        if dependency == index { return "call \"\(name)\" \(relation) itself (a cycle)" }
        if let path = path(from: dependency, to: index, calls: calls) {
            let cycle = ([index] + path).map { calls[$0].name }.joined(separator: " → ")
            return "calls form a cycle: \(cycle)"
        }
        return "call \"\(name)\" \(relation) \"\(calls[dependency].name)\", which comes later; "
            + "a call may depend only on earlier calls"
    }

    /// A dependency path from `start` to `goal` (both ends included), if one exists.
    private static func path(from start: Int, to goal: Int, calls: [GatewayV1.BatchCall]) -> [Int]? {
        var indexByName: [String: Int] = [:]
        for (index, call) in calls.enumerated() { indexByName[call.name] = index }
        var previous: [Int: Int] = [start: start]
        var queue = [start]
        while !queue.isEmpty {
            let current = queue.removeFirst()
            if current == goal {
                var path = [goal]
                while let step = previous[path[0]], step != path[0] { path.insert(step, at: 0) }
                return path
            }
            let call = calls[current]
            for name in call.dependsOn + call.references.map(\.fromCall) {
                guard let next = indexByName[name], previous[next] == nil else { continue }
                previous[next] = current
                queue.append(next)
            }
        }
        return nil
    }

    /// Checks a reference's paths: the source path must exist in the source method's response, the target
    /// path in this method's request, and the value types must match.
    private static func resolve(
        _ reference: GatewayV1.FieldReference, source: Int, calls: [GatewayV1.BatchCall], index: Int,
        registry: DescriptorRegistry
    ) throws(RPCError) -> Reference {
        let name = calls[index].name
        do {
            let sourceMethod = try registry.method(calls[source].method)
            let targetMethod = try registry.method(calls[index].method)
            let from = try FieldPath(reference.fromPath).resolve(in: sourceMethod.response)
            let to = try FieldPath(reference.toPath).resolve(in: targetMethod.request)
            try to.checkAccepts(valuesAt: from)
            return Reference(source: source, from: from, to: to)
        } catch {
            throw .invalidArgument("call \"\(name)\" has an unusable reference: \(error.message)")
        }
    }
}
