import RaveMessages
import RaveWire

/// The protocol state of one server connection, with no channel, loop, clock or handler in it.
///
/// Its methods take what happened (a frame arrived, a call finished, a timer fired, the peer left, a drain was
/// asked for) and return what the connection must do about it (send a frame, answer a call, arm or cancel a
/// timer, close). `ServerConnection` owns one, feeds it the channel's events and carries out its actions, so
/// every rule of docs/PROTOCOL.md that concerns a connection's state — the handshake first, stream ids unique
/// among calls in flight, at most so many calls at once, GOAWAY and the drain grace period, deadlines, idle and
/// stalled connections, and the connection's share of the input budget — is decided here and tested without
/// sockets (`ServerConnectionStateMachineTests`).
///
/// Times are the caller's monotonic nanoseconds, passed in. `Call` is what the connection keeps for a call in
/// flight (its handler's task, its method for metrics); the machine stores it and hands it back, never looks
/// inside. Confined to the connection's event loop, like the connection.
struct ServerConnectionStateMachine<Call> {
    /// Where the connection is in its life.
    enum Phase: Equatable {
        /// Accepted; the channel is not active yet.
        case idle
        /// Our HANDSHAKE is sent; calls come once the client's has arrived (`handshakeDone`).
        case open
        /// GOAWAY sent or received: calls in flight finish, new ones are refused, the connection closes when none
        /// is left.
        case goingAway
        case closed
    }

    /// The timers a connection keeps; each is armed at most once at a time.
    enum Timer: Int, CaseIterable {
        /// The client's HANDSHAKE must arrive before it fires.
        case handshake
        /// Checks whether the connection has been idle for `idleTimeout`.
        case idle
        /// Ends the drain grace period.
        case grace
        /// Checks a frame that has begun to arrive for progress.
        case stall
        /// The earliest deadline of a call in flight.
        case deadline
    }

    /// What the connection must do.
    enum Action {
        case sendHandshake
        case sendGoAway(lastStreamID: UInt32)
        /// Answer `call` on `streamID` with a status of the machine's own (the call's work must be cancelled:
        /// it is no longer in flight).
        case answer(streamID: UInt32, call: Call, code: StatusCode, message: String)
        /// Nobody will hear `call`'s answer (the connection closed): cancel its work, count it cancelled.
        case abandon(Call)
        /// Arm `timer` for `at`, replacing it when it is armed already.
        case armTimer(Timer, at: UInt64)
        case cancelTimer(Timer)
        /// Send an ERROR frame with this status, then close.
        case failConnection(StatusCode, String)
        /// Give `bytes` of the input budget back.
        case releaseInput(Int)
        /// Close the channel (after writing what is queued).
        case close
    }

    /// What a frame that arrived means for the connection.
    enum FrameDecision: Equatable {
        /// The client's HANDSHAKE: parse it, then call `handshakeReceived(maxFrameSize:)`.
        case handshake
        /// A REQUEST: check it with `requestArrived(streamID:)` and go on.
        case request
        /// A CANCEL of `streamID`: call `cancelReceived(streamID:)`.
        case cancel
        case pong
        /// The client leaves: parse its GOAWAY, then call `goAwayReceived()`.
        case goAway
        /// The client reported a protocol error: close.
        case peerError
        case ignore
    }

    struct Settings {
        var maxConcurrentStreams: Int
        var idleTimeout: UInt64
        var handshakeTimeout: UInt64
        var drainGracePeriod: UInt64
        var stalledFrameTimeout: UInt64
        var defaultTimeout: UInt64
        var maxTimeout: UInt64
    }

    /// A call in flight; `sequence` tells a late completion from a reused stream id.
    private struct Stream {
        var sequence: UInt64
        var deadline: UInt64
        var call: Call
    }

    let settings: Settings
    private(set) var phase = Phase.idle
    /// Whether the client's HANDSHAKE arrived; until then no other frame is allowed.
    private(set) var handshakeDone = false
    private var streams: [UInt32: Stream] = [:]
    private var nextSequence: UInt64 = 0
    private(set) var highestStreamID: UInt32 = 0
    /// The client's frame limit from its HANDSHAKE; responses larger than this are refused.
    private(set) var peerMaxFrameSize = Frame.defaultMaxFrameSize
    private var armedTimers: [Bool] = Array(repeating: false, count: Timer.allCases.count)
    /// The deadline the deadline timer is armed for; `.max` when it is not armed.
    private var armedDeadline: UInt64 = .max
    private var lastActivity: UInt64 = 0

    // Input accounting (docs/PROTOCOL.md §11): this connection's share of the server's input budget and the size
    // reserved for the large frame being received.
    private(set) var inputCharge = 0
    private var largeFrameReservation = 0
    /// True once the peer's role allows it or a call other than Health/Check was answered OK.
    private(set) var mayBufferLargeFrames = false

    init(settings: Settings) {
        self.settings = settings
    }

    var isClosed: Bool { phase == .closed }
    var callCount: Int { streams.count }

    /// The call in flight on `streamID`, if any.
    func call(on streamID: UInt32) -> Call? { streams[streamID]?.call }

    // MARK: - Life

    /// The channel is active: send our HANDSHAKE, wait for the client's, watch for idleness.
    ///
    /// A server already draining sends GOAWAY at once. `trustedPeer`: its role may send large frames from the
    /// start.
    mutating func activated(now: UInt64, trustedPeer: Bool, draining: Bool) -> [Action] {
        guard phase == .idle else { return [] }
        phase = .open
        mayBufferLargeFrames = trustedPeer
        lastActivity = now
        var actions: [Action] = [.sendHandshake]
        arm(.handshake, at: now &+ settings.handshakeTimeout, &actions)
        arm(.idle, at: now &+ settings.idleTimeout, &actions)
        if draining { actions += drainRequested(now: now) }
        return actions
    }

    /// Decides what a frame of `type` on `streamID` means in the current phase.
    @inline(__always)  // Per call: inlined, the caller reads the fields it needs instead of copying the machine.
    func frameReceived(type: FrameType) throws(RPCError) -> FrameDecision {
        guard phase != .closed else { return .ignore }
        if !handshakeDone {
            guard type == .handshake else {
                throw .invalidArgument("the first frame must be HANDSHAKE, got \(type)")
            }
            return .handshake
        }
        switch type {
        case .request: return .request
        case .cancel: return .cancel
        case .ping: return .pong
        case .pong: return .ignore
        case .goAway: return .goAway
        case .error: return .peerError
        case .handshake: throw .invalidArgument("a second HANDSHAKE frame")
        case .response: throw .invalidArgument("a client must not send RESPONSE frames")
        }
    }

    /// The client's HANDSHAKE parsed: calls may come now.
    mutating func handshakeReceived(maxFrameSize: UInt32) -> [Action] {
        guard phase != .closed, !handshakeDone else { return [] }
        if maxFrameSize >= UInt32(Frame.headerSize) { peerMaxFrameSize = Int(maxFrameSize) }
        handshakeDone = true
        var actions: [Action] = []
        disarm(.handshake, &actions)
        return actions
    }

    /// The handshake timer fired: a client that has not sent its HANDSHAKE by now is closed.
    mutating func handshakeTimerFired() -> [Action] {
        armedTimers[Timer.handshake.rawValue] = false
        guard phase != .closed, !handshakeDone else { return [] }
        return [
            .failConnection(
                .deadlineExceeded,
                "no HANDSHAKE frame arrived within \(Duration.nanoseconds(settings.handshakeTimeout)) of connecting")
        ]
    }

    /// The client sent GOAWAY: answer what is in flight, then close.
    mutating func goAwayReceived() -> [Action] {
        guard phase == .open || phase == .goingAway else { return [] }
        phase = .goingAway
        return closeIfDrained()
    }

    /// The server drains: GOAWAY, calls in flight get the grace period, later requests are refused.
    mutating func drainRequested(now: UInt64) -> [Action] {
        guard phase == .open else { return [] }
        phase = .goingAway
        var actions: [Action] = [.sendGoAway(lastStreamID: highestStreamID)]
        arm(.grace, at: now &+ settings.drainGracePeriod, &actions)
        actions += closeIfDrained()
        return actions
    }

    /// The grace period is over: every call still running is answered UNAVAILABLE (it may have had an effect,
    /// so not "not processed"), and the connection closes.
    mutating func graceTimerFired() -> [Action] {
        armedTimers[Timer.grace.rawValue] = false
        guard phase != .closed else { return [] }
        var actions: [Action] = []
        for streamID in streams.keys.sorted() {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            actions.append(
                .answer(
                    streamID: streamID, call: stream.call, code: .unavailable,
                    message: "the server shut down before the call finished (drain grace period over)"))
        }
        return actions + closed(closeChannel: true)
    }

    /// The connection closes by our own decision (a protocol error, the peer's ERROR frame, the drain ended).
    mutating func closeRequested() -> [Action] {
        closed(closeChannel: true)
    }

    /// The channel closed (the peer left, or our own close completed).
    mutating func channelInactive() -> [Action] {
        closed(closeChannel: false)
    }

    private mutating func closed(closeChannel: Bool) -> [Action] {
        guard phase != .closed else { return [] }
        phase = .closed
        var actions: [Action] = []
        for streamID in streams.keys.sorted() {
            if let stream = streams[streamID] { actions.append(.abandon(stream.call)) }
        }
        streams.removeAll()
        for timer in Timer.allCases { disarm(timer, &actions) }
        armedDeadline = .max
        if inputCharge != 0 { actions.append(.releaseInput(inputCharge)) }
        inputCharge = 0
        largeFrameReservation = 0
        if closeChannel { actions.append(.close) }
        return actions
    }

    // MARK: - Calls

    /// A REQUEST on `streamID` arrived: a stream id in flight is a protocol error.
    @inline(__always)  // Per call: inlined, the caller reads the fields it needs instead of copying the machine.
    func requestArrived(streamID: UInt32) throws(RPCError) {
        guard streams[streamID] == nil else {
            throw .invalidArgument("stream id \(streamID) is already in flight")
        }
    }

    /// Whether a new call may start now; the refusal when not (both "not processed").
    @inline(__always)  // Per call: inlined, the caller reads the fields it needs instead of copying the machine.
    func admission() -> RPCError? {
        if phase == .goingAway {
            return .unavailable("the server is draining; retry on another connection", notProcessed: true)
        }
        guard streams.count < settings.maxConcurrentStreams else {
            return RPCError(
                .resourceExhausted,
                "at most \(settings.maxConcurrentStreams) calls may be in flight on one connection",
                notProcessed: true)
        }
        return nil
    }

    /// The call's deadline: its relative timeout (milliseconds, 0 for the default), capped at `maxTimeout`.
    @inline(__always)  // Per call: inlined, the caller reads the fields it needs instead of copying the machine.
    func deadline(now: UInt64, timeoutMilliseconds: UInt32) -> UInt64 {
        let timeout =
            timeoutMilliseconds == 0
            ? settings.defaultTimeout : min(UInt64(timeoutMilliseconds) * 1_000_000, settings.maxTimeout)
        return now &+ timeout
    }

    /// What starting a call returns: the sequence its completion must carry, and whether the deadline timer is
    /// to be armed (earlier) for it.
    struct Started {
        var sequence: UInt64
        var armDeadlineTimer: Bool
    }

    /// Records a call admitted on `streamID`, due at `deadline`.
    mutating func callStarted(streamID: UInt32, deadline: UInt64, call: Call) -> Started {
        nextSequence += 1
        streams[streamID] = Stream(sequence: nextSequence, deadline: deadline, call: call)
        highestStreamID = max(highestStreamID, streamID)
        // Calls of one connection usually share a timeout: a later call's deadline is rarely the earliest.
        let earlier = deadline < armedDeadline
        if earlier {
            armedDeadline = deadline
            armedTimers[Timer.deadline.rawValue] = true
        }
        return Started(sequence: nextSequence, armDeadlineTimer: earlier)
    }

    /// Replaces what the connection keeps for the call on `streamID` (its task, known only after it started).
    mutating func updateCall(on streamID: UInt32, sequence: UInt64, _ update: (inout Call) -> Void) {
        guard streams[streamID]?.sequence == sequence else { return }
        update(&streams[streamID]!.call)
    }

    /// A call's handler finished: the call, when it is still the one in flight on `streamID` (a completion that
    /// comes after a cancel, a deadline or a close finds nothing).
    mutating func callFinished(streamID: UInt32, sequence: UInt64) -> Call? {
        guard let stream = streams[streamID], stream.sequence == sequence else { return nil }
        streams[streamID] = nil
        return stream.call
    }

    /// A call of `method` was answered with `code`: an OK answer to a call other than Health/Check proves the
    /// peer may send large frames.
    mutating func callAnswered(method: String, code: StatusCode) {
        // Cheapest test first: nearly every call is answered on a connection that already proved itself.
        if !mayBufferLargeFrames && code == .ok && method != HealthCheck.methodName { mayBufferLargeFrames = true }
    }

    /// Closes a connection that is going away once its last call is answered; call after answering a call.
    mutating func closeIfDrained() -> [Action] {
        guard phase == .goingAway, streams.isEmpty else { return [] }
        return closed(closeChannel: true)
    }

    /// The client cancelled `streamID`: it is answered CANCELLED (nothing happens when it is not in flight).
    mutating func cancelReceived(streamID: UInt32) -> [Action] {
        guard phase != .closed, let stream = streams.removeValue(forKey: streamID) else { return [] }
        let answer = Action.answer(
            streamID: streamID, call: stream.call, code: .cancelled, message: "the client cancelled the call")
        return [answer] + closeIfDrained()
    }

    /// The deadline timer fired at `now`: every call due is answered DEADLINE_EXCEEDED, earliest deadline first
    /// (a timer that fires late may find several), and the timer is armed for the earliest deadline left.
    mutating func deadlineTimerFired(now: UInt64) -> [Action] {
        armedTimers[Timer.deadline.rawValue] = false
        armedDeadline = .max
        guard phase != .closed else { return [] }
        let due = streams.compactMap { streamID, stream in stream.deadline <= now ? (streamID, stream.deadline) : nil }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
        var actions: [Action] = []
        for (streamID, _) in due {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            actions.append(
                .answer(
                    streamID: streamID, call: stream.call, code: .deadlineExceeded,
                    message: "the deadline passed before the call finished"))
        }
        if phase == .goingAway && streams.isEmpty { return actions + closed(closeChannel: true) }
        if let earliest = streams.values.lazy.map(\.deadline).min() {
            armedDeadline = earliest
            arm(.deadline, at: earliest, &actions)
        }
        return actions
    }

    // MARK: - Idle and stalled connections

    /// Bytes arrived, or the peer's reading resumed: the connection is not idle, an unfinished frame not stalled.
    mutating func activity(now: UInt64) {
        lastActivity = now
    }

    /// A read ended; an unfinished frame left in the decoder is watched for progress.
    mutating func readCompleted(now: UInt64, hasPartialFrame: Bool) -> Action? {
        lastActivity = now
        guard phase != .closed, hasPartialFrame, !armedTimers[Timer.stall.rawValue] else { return nil }
        armedTimers[Timer.stall.rawValue] = true
        return .armTimer(.stall, at: now &+ settings.stalledFrameTimeout)
    }

    /// The stall timer fired: a frame that got no byte for `stalledFrameTimeout` closes the connection, unless
    /// the server itself stopped reading (back pressure: `isWritable` false), which is not the client's fault.
    mutating func stallTimerFired(now: UInt64, hasPartialFrame: Bool, isWritable: Bool) -> [Action] {
        armedTimers[Timer.stall.rawValue] = false
        guard phase != .closed, hasPartialFrame else { return [] }
        if !isWritable { lastActivity = now }
        let due = lastActivity &+ settings.stalledFrameTimeout
        guard now >= due else {
            var actions: [Action] = []
            arm(.stall, at: due, &actions)
            return actions
        }
        return [
            .failConnection(
                .deadlineExceeded,
                "a frame was left unfinished: no byte of it arrived for "
                    + "\(Duration.nanoseconds(settings.stalledFrameTimeout))")
        ]
    }

    /// The idle timer fired: a connection without calls and without traffic for `idleTimeout` drains; otherwise
    /// the check comes again.
    mutating func idleTimerFired(now: UInt64) -> [Action] {
        armedTimers[Timer.idle.rawValue] = false
        guard phase != .closed else { return [] }
        let idleUntil = lastActivity &+ settings.idleTimeout
        if streams.isEmpty && now >= idleUntil {
            return drainRequested(now: now)
        }
        var actions: [Action] = []
        arm(.idle, at: max(idleUntil, now &+ settings.idleTimeout / 4), &actions)
        return actions
    }

    // MARK: - Input budget

    /// Whether a frame longer than the early limit may be buffered: the bytes to reserve from the server's budget
    /// for it, or nil to refuse it without asking.
    func largeFrameReservation(type: FrameType, wireSize: Int) -> Int? {
        guard mayBufferLargeFrames, handshakeDone, type == .request else { return nil }
        return max(0, wireSize - inputCharge)
    }

    /// The budget granted `extra` bytes for a large frame of `wireSize` bytes.
    mutating func largeFrameAdmitted(extra: Int, wireSize: Int) {
        inputCharge += extra
        largeFrameReservation = wireSize
    }

    /// A frame was decoded whole: frames arrive one after another, so a reservation was for this one.
    mutating func frameCompleted() {
        largeFrameReservation = 0
    }

    /// How to answer a frame the decoder skipped because it was over the early limit and not admitted: a REQUEST
    /// on a usable stream is refused on its stream (RESOURCE_EXHAUSTED, not processed); anything else is a
    /// protocol error (thrown).
    func refusal(
        type: FrameType, streamID: UInt32, length: Int, earlyLimit: Int, budgetLimit: Int
    ) throws(RPCError) -> RPCError {
        guard type == .request, handshakeDone else {
            throw RPCError(.resourceExhausted, "a \(type) frame may be at most \(earlyLimit) bytes long, got \(length)")
        }
        guard streamID != 0, streams[streamID] == nil else {
            throw .invalidArgument("stream id \(streamID) is zero or already in flight")
        }
        let message =
            mayBufferLargeFrames
            ? "the server is receiving too many large requests at once (\(budgetLimit) bytes); retry shortly"
            : "requests over \(earlyLimit) bytes are accepted once a call on this connection has succeeded; "
                + "this one has \(length)"
        return RPCError(.resourceExhausted, message, notProcessed: true)
    }

    /// Brings the connection's share in line with the `buffered` bytes its decoder holds now: the change to
    /// apply to the server's budget.
    mutating func settleInput(buffered: Int) -> Int {
        guard phase != .closed else { return 0 }
        let holding = max(buffered, largeFrameReservation)
        let delta = holding - inputCharge
        inputCharge = holding
        return delta
    }

    // MARK: - Timers

    /// Arms `timer`, replacing the one armed before.
    private mutating func arm(_ timer: Timer, at deadline: UInt64, _ actions: inout [Action]) {
        armedTimers[timer.rawValue] = true
        actions.append(.armTimer(timer, at: deadline))
    }

    private mutating func disarm(_ timer: Timer, _ actions: inout [Action]) {
        guard armedTimers[timer.rawValue] else { return }
        armedTimers[timer.rawValue] = false
        actions.append(.cancelTimer(timer))
    }
}
