import RaveMessages
import RaveWire
import Testing

@testable import RaveRPC

/// The server connection's protocol state, fed events and checked by the actions it returns: no socket, no
/// loop, no clock (times are plain numbers), no sleep.
@Suite struct ServerConnectionStateMachineTests {
    typealias Machine = ServerConnectionStateMachine<String>

    static let second: UInt64 = 1_000_000_000
    static let settings = Machine.Settings(
        maxConcurrentStreams: 3, idleTimeout: 300 * second, handshakeTimeout: 10 * second,
        drainGracePeriod: 30 * second, stalledFrameTimeout: 10 * second, defaultTimeout: 30 * second,
        maxTimeout: 60 * second)

    /// A machine past its handshake at time 0.
    func openMachine(trustedPeer: Bool = false) -> Machine {
        var machine = Machine(settings: Self.settings)
        _ = machine.activated(now: 0, trustedPeer: trustedPeer, draining: false)
        _ = machine.handshakeReceived(maxFrameSize: 1 << 20)
        return machine
    }

    /// Starts a call named `name` on `streamID`, due `timeout` seconds after `now`.
    func start(
        _ machine: inout Machine, _ streamID: UInt32, _ name: String, now: UInt64 = 0, timeoutSeconds: UInt32 = 30
    ) throws -> Machine.Started {
        try machine.requestArrived(streamID: streamID)
        #expect(machine.admission() == nil)
        let deadline = machine.deadline(now: now, timeoutMilliseconds: timeoutSeconds * 1000)
        return machine.callStarted(streamID: streamID, deadline: deadline, call: name)
    }

    /// The actions in a form `#expect` can compare.
    func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .sendHandshake: "handshake"
            case .sendGoAway(let last): "goaway \(last)"
            case .answer(let streamID, let call, let code, _): "answer \(streamID) \(call) \(code)"
            case .abandon(let call): "abandon \(call)"
            case .armTimer(let timer, let deadline): "arm \(timer) \(deadline / Self.second)s"
            case .cancelTimer(let timer): "cancel \(timer)"
            case .failConnection(let code, _): "fail \(code)"
            case .releaseInput(let bytes): "release \(bytes)"
            case .close: "close"
            }
        }
    }

    // MARK: - Handshake

    @Test func activationSendsTheHandshakeAndArmsTheHandshakeAndIdleTimers() {
        var machine = Machine(settings: Self.settings)
        let actions = machine.activated(now: 5 * Self.second, trustedPeer: false, draining: false)
        #expect(describe(actions) == ["handshake", "arm handshake 15s", "arm idle 305s"])
    }

    @Test func aFrameBeforeTheClientsHandshakeIsAProtocolError() {
        var machine = Machine(settings: Self.settings)
        _ = machine.activated(now: 0, trustedPeer: false, draining: false)
        #expect(throws: RPCError.self) { try machine.frameReceived(type: .request) }
        #expect((try? machine.frameReceived(type: .handshake)) == .handshake)
    }

    @Test func theHandshakeCancelsItsTimerAndASecondOneIsAProtocolError() throws {
        var machine = Machine(settings: Self.settings)
        _ = machine.activated(now: 0, trustedPeer: false, draining: false)
        #expect(describe(machine.handshakeReceived(maxFrameSize: 64 << 10)) == ["cancel handshake"])
        #expect(machine.peerMaxFrameSize == 64 << 10)
        #expect(throws: RPCError.self) { try machine.frameReceived(type: .handshake) }
        #expect(try machine.frameReceived(type: .request) == .request)
        #expect(throws: RPCError.self) { try machine.frameReceived(type: .response) }
    }

    @Test func aClientSilentPastTheHandshakeTimeoutIsClosed() {
        var machine = Machine(settings: Self.settings)
        _ = machine.activated(now: 0, trustedPeer: false, draining: false)
        #expect(describe(machine.handshakeTimerFired()) == ["fail deadlineExceeded"])
    }

    @Test func theHandshakeTimerFiringAfterTheHandshakeDoesNothing() {
        var machine = openMachine()
        #expect(machine.handshakeTimerFired().isEmpty)
    }

    // MARK: - Streams

    @Test func aDuplicateStreamIDInFlightIsAProtocolErrorAndItsReuseAfterwardsIsNot() throws {
        var machine = openMachine()
        let started = try start(&machine, 1, "first")
        #expect(throws: RPCError.self) { try machine.requestArrived(streamID: 1) }
        #expect(machine.callFinished(streamID: 1, sequence: started.sequence) == "first")
        #expect(throws: Never.self) { try machine.requestArrived(streamID: 1) }
    }

    @Test func aLateCompletionDoesNotFinishTheCallThatReusedItsStreamID() throws {
        var machine = openMachine()
        let first = try start(&machine, 1, "first")
        _ = machine.cancelReceived(streamID: 1)
        let second = try start(&machine, 1, "second")
        #expect(machine.callFinished(streamID: 1, sequence: first.sequence) == nil)
        #expect(machine.call(on: 1) == "second")
        #expect(machine.callFinished(streamID: 1, sequence: second.sequence) == "second")
    }

    @Test func callsOverTheStreamLimitAreRefusedNotProcessed() throws {
        var machine = openMachine()
        _ = try start(&machine, 1, "a")
        _ = try start(&machine, 3, "b")
        _ = try start(&machine, 5, "c")
        let refusal = try #require(machine.admission())
        #expect(refusal.code == .resourceExhausted)
        #expect(refusal.notProcessed)
    }

    @Test func aCancelAnswersTheCallCancelled() throws {
        var machine = openMachine()
        _ = try start(&machine, 7, "slow")
        #expect(describe(machine.cancelReceived(streamID: 7)) == ["answer 7 slow cancelled"])
        #expect(machine.cancelReceived(streamID: 7).isEmpty)
    }

    // MARK: - Deadlines

    @Test func onlyAnEarlierDeadlineArmsTheTimer() throws {
        var machine = openMachine()
        #expect(try start(&machine, 1, "a", timeoutSeconds: 30).armDeadlineTimer)
        #expect(!(try start(&machine, 3, "b", timeoutSeconds: 40).armDeadlineTimer))
        #expect(try start(&machine, 5, "c", timeoutSeconds: 0).armDeadlineTimer == false)
    }

    @Test func aShorterDeadlineAfterALongerOneArmsTheTimerEarlier() throws {
        var machine = openMachine()
        _ = try start(&machine, 1, "long", timeoutSeconds: 30)
        #expect(try start(&machine, 3, "short", timeoutSeconds: 1).armDeadlineTimer)
    }

    @Test func dueCallsExpireEarliestFirstAndTheTimerIsRearmedForTheNext() throws {
        var machine = Machine(settings: Self.settings)
        _ = machine.activated(now: 0, trustedPeer: false, draining: false)
        _ = machine.handshakeReceived(maxFrameSize: 1 << 20)
        _ = try start(&machine, 5, "two", timeoutSeconds: 2)
        _ = try start(&machine, 3, "one", timeoutSeconds: 1)
        _ = try start(&machine, 9, "ten", timeoutSeconds: 10)
        // A timer that fires late finds two calls due.
        let actions = machine.deadlineTimerFired(now: 3 * Self.second)
        #expect(
            describe(actions) == [
                "answer 3 one deadlineExceeded", "answer 5 two deadlineExceeded", "arm deadline 10s",
            ])
        #expect(machine.callCount == 1)
    }

    @Test func timeoutsAreCappedAndZeroMeansTheDefault() {
        let machine = openMachine()
        #expect(machine.deadline(now: 0, timeoutMilliseconds: 0) == 30 * Self.second)
        #expect(machine.deadline(now: 0, timeoutMilliseconds: 3_600_000) == 60 * Self.second)
    }

    // MARK: - Drain

    @Test func drainingSendsGoAwayWithTheLastStreamAndRefusesNewCalls() throws {
        var machine = openMachine()
        let started = try start(&machine, 11, "running")
        #expect(describe(machine.drainRequested(now: 0)) == ["goaway 11", "arm grace 30s"])
        let refusal = try #require(machine.admission())
        #expect(refusal.code == .unavailable)
        #expect(refusal.notProcessed)
        // The last call's answer closes the connection.
        #expect(machine.callFinished(streamID: 11, sequence: started.sequence) == "running")
        #expect(describe(machine.closeIfDrained()) == ["cancel idle", "cancel grace", "cancel deadline", "close"])
        #expect(machine.isClosed)
    }

    @Test func drainingAnIdleConnectionClosesAtOnce() {
        var machine = openMachine()
        #expect(
            describe(machine.drainRequested(now: 0)) == [
                "goaway 0", "arm grace 30s", "cancel idle", "cancel grace", "close",
            ])
    }

    @Test func aConnectionAcceptedWhileDrainingGetsGoAwayRightAfterItsHandshake() {
        var machine = Machine(settings: Self.settings)
        let actions = machine.activated(now: 0, trustedPeer: false, draining: true)
        #expect(describe(actions).prefix(4) == ["handshake", "arm handshake 10s", "arm idle 300s", "goaway 0"])
        #expect(describe(actions).last == "close")
    }

    @Test func theGracePeriodAnswersEveryCallStillRunningUnavailableThenCloses() throws {
        var machine = openMachine()
        _ = try start(&machine, 3, "b")
        _ = try start(&machine, 1, "a")
        _ = machine.drainRequested(now: 0)
        #expect(
            describe(machine.graceTimerFired()) == [
                "answer 1 a unavailable", "answer 3 b unavailable", "cancel idle", "cancel deadline", "close",
            ])
    }

    @Test func aClientGoAwayClosesOnceItsCallsAreAnswered() throws {
        var machine = openMachine()
        _ = try start(&machine, 1, "a")
        #expect(machine.goAwayReceived().isEmpty)
        #expect(describe(machine.cancelReceived(streamID: 1)).first == "answer 1 a cancelled")
        #expect(machine.isClosed)
    }

    @Test func anExpiredLastCallClosesADrainingConnection() throws {
        var machine = openMachine()
        _ = try start(&machine, 1, "a", timeoutSeconds: 1)
        _ = machine.drainRequested(now: 0)
        let actions = describe(machine.deadlineTimerFired(now: 2 * Self.second))
        #expect(actions.first == "answer 1 a deadlineExceeded")
        #expect(actions.last == "close")
    }

    // MARK: - Closing

    @Test func theChannelGoingAwayAbandonsEveryCallAndGivesTheInputBack() throws {
        var machine = openMachine(trustedPeer: true)
        _ = try start(&machine, 1, "a")
        let extra = try #require(machine.largeFrameReservation(type: .request, wireSize: 100_000))
        machine.largeFrameAdmitted(extra: extra, wireSize: 100_000)
        #expect(
            describe(machine.channelInactive()) == [
                "abandon a", "cancel idle", "cancel deadline", "release 100000",
            ])
        #expect(machine.channelInactive().isEmpty)
        #expect(machine.callFinished(streamID: 1, sequence: 1) == nil)
    }

    @Test func aFrameAfterCloseIsIgnored() throws {
        var machine = openMachine()
        _ = machine.closeRequested()
        #expect(try machine.frameReceived(type: .request) == .ignore)
    }

    // MARK: - Idle and stalled connections

    @Test func anIdleConnectionDrainsAndABusyOneIsCheckedAgain() throws {
        var machine = openMachine()
        let started = try start(&machine, 1, "a")
        // A call in flight: not idle, checked again a quarter of the timeout later.
        #expect(describe(machine.idleTimerFired(now: 300 * Self.second)) == ["arm idle 375s"])
        _ = machine.callFinished(streamID: 1, sequence: started.sequence)
        machine.activity(now: 310 * Self.second)
        #expect(describe(machine.idleTimerFired(now: 375 * Self.second)) == ["arm idle 610s"])
        #expect(describe(machine.idleTimerFired(now: 610 * Self.second)).first == "goaway 1")
    }

    @Test func anUnfinishedFrameWithoutProgressClosesTheConnection() {
        var machine = openMachine()
        let action = machine.readCompleted(now: 1 * Self.second, hasPartialFrame: true)
        #expect(action.map { describe([$0]) } == ["arm stall 11s"])
        // Armed once: a second read does not arm it again.
        #expect(machine.readCompleted(now: 2 * Self.second, hasPartialFrame: true) == nil)
        // The last byte came at 2 s: at 11 s the frame is not stalled yet.
        #expect(
            describe(machine.stallTimerFired(now: 11 * Self.second, hasPartialFrame: true, isWritable: true)) == [
                "arm stall 12s"
            ])
        #expect(
            describe(machine.stallTimerFired(now: 12 * Self.second, hasPartialFrame: true, isWritable: true)) == [
                "fail deadlineExceeded"
            ])
    }

    @Test func aStalledFrameIsNotTheClientsFaultWhileTheServerDoesNotRead() {
        var machine = openMachine()
        _ = machine.readCompleted(now: 0, hasPartialFrame: true)
        #expect(
            describe(machine.stallTimerFired(now: 10 * Self.second, hasPartialFrame: true, isWritable: false)) == [
                "arm stall 20s"
            ])
    }

    // MARK: - Input budget

    @Test func largeFramesNeedATrustedPeerOrASuccessfulCall() throws {
        var machine = openMachine()
        #expect(machine.largeFrameReservation(type: .request, wireSize: 100_000) == nil)
        let refusal = try machine.refusal(
            type: .request, streamID: 1, length: 100_000, earlyLimit: 65_536, budgetLimit: 1 << 27)
        #expect(refusal.code == .resourceExhausted)
        #expect(refusal.notProcessed)
        #expect(refusal.message.contains("once a call on this connection has succeeded"))
        // A Health check proves nothing; another successful call does.
        machine.callAnswered(method: HealthCheck.methodName, code: .ok)
        #expect(machine.largeFrameReservation(type: .request, wireSize: 100_000) == nil)
        machine.callAnswered(method: "rave.echo.v1.Echo/Echo", code: .ok)
        #expect(machine.largeFrameReservation(type: .request, wireSize: 100_000) == 100_000)
        #expect(machine.largeFrameReservation(type: .ping, wireSize: 100_000) == nil)
    }

    @Test func aLargeNonRequestFrameIsAProtocolError() {
        let machine = openMachine(trustedPeer: true)
        #expect(throws: RPCError.self) {
            try machine.refusal(type: .ping, streamID: 0, length: 100_000, earlyLimit: 65_536, budgetLimit: 1 << 27)
        }
    }

    @Test func theShareFollowsTheBufferedBytesAndKeepsALargeFramesReservation() throws {
        var machine = openMachine(trustedPeer: true)
        #expect(machine.settleInput(buffered: 1_000) == 1_000)
        let extra = try #require(machine.largeFrameReservation(type: .request, wireSize: 100_000))
        #expect(extra == 99_000)
        machine.largeFrameAdmitted(extra: extra, wireSize: 100_000)
        // Part of the frame arrived: the reservation still holds the whole frame's size.
        #expect(machine.settleInput(buffered: 50_000) == 0)
        machine.frameCompleted()
        #expect(machine.settleInput(buffered: 0) == -100_000)
        #expect(machine.inputCharge == 0)
    }
}
