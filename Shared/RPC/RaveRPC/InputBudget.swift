import Synchronization

/// The bytes of unfinished frames every connection of one server holds together, against
/// `RPCServerConfiguration.maxBufferedInput`.
///
/// Each connection keeps its own share up to date (`adjust`), and asks for room before it buffers a frame longer
/// than the early limit (`reserve`): the frame's whole size is reserved up front, so frames that are still
/// arriving cannot together outgrow the budget.
final class InputBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Bytes held now.
    var current: Int { used.load(ordering: .relaxed) }

    /// Large frames refused so far because they did not fit.
    var refusedFrames: Int { refused.load(ordering: .relaxed) }

    /// Takes `bytes` more if they fit under the limit.
    func reserve(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else {
                refused.wrappingAdd(1, ordering: .relaxed)
                return false
            }
            let (exchanged, original) = used.weakCompareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Adds (or with a negative `delta`, gives back) bytes without checking the limit.
    func adjust(by delta: Int) {
        guard delta != 0 else { return }
        used.wrappingAdd(delta, ordering: .relaxed)
    }
}
