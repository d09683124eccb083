import RaveRPC

/// Many calls at once against one entity, as a crowd of players makes them.
public enum ConcurrentCalls {
    /// Runs `body(0)` … `body(count - 1)` concurrently and returns each call's outcome in index order.
    public static func run<Value: Sendable>(
        _ count: Int, _ body: @escaping @Sendable (Int) async throws -> Value
    ) async -> [Result<Value, any Error>] {
        await withTaskGroup(of: (Int, Result<Value, any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        return (index, .success(try await body(index)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<Value, any Error>?](repeating: nil, count: count)
            for await (index, result) in group { results[index] = result }
            return results.map { $0! }
        }
    }

    /// The failures among `results` as the RPC layer would answer them ("aborted could not serialize …"), with how
    /// many calls failed so: empty when every call succeeded, and a readable expectation message when not.
    public static func failures<Value>(_ results: [Result<Value, any Error>]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for case .failure(let error) in results {
            let mapped = RPCError(mapping: error, requestID: "test")
            counts["\(mapped.code) \(mapped.message)", default: 0] += 1
        }
        return counts
    }
}
