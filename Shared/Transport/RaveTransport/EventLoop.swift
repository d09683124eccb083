import CRaveSystem
import Glibc
import Synchronization

/// Readiness a registered descriptor is interested in or reports.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = IOEvents(rawValue: 1 << 0)
    public static let writable = IOEvents(rawValue: 1 << 1)
    /// The peer hung up or the descriptor is in error; delivered whether or not it was asked for.
    public static let hangup = IOEvents(rawValue: 1 << 2)
    public static let error = IOEvents(rawValue: 1 << 3)
}

/// Something that owns a descriptor registered with an event loop.
///
/// All methods are called on the loop the descriptor is registered with.
public protocol IOHandler: AnyObject {
    func handleEvents(_ events: IOEvents)
}

/// A descriptor's registration; events for a closed-and-reused descriptor carry another id and are dropped.
public struct IORegistration: Hashable, Sendable {
    public let fd: Int32
    let id: UInt32
}

/// A timer scheduled on an event loop.
public struct TimerHandle: Hashable, Sendable {
    let id: UInt64
}

/// A single-threaded epoll event loop running on a thread of its own.
///
/// `execute(_:)`, `isInLoop`, `enqueue(_:)` and `shutdown()` may be called from any thread. Every other method
/// must be called on the loop's own thread (checked by assertions); I/O handlers and timer callbacks run there
/// too. The loop is also a `TaskExecutor`: a Task created with `executorPreference: loop` runs its nonisolated
/// code on the loop thread, so a request handler and the connection it answers on never change threads.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: `pending` and `pendingJobs` are guarded by their Mutexes; the rest is confined to the loop thread.

    public let index: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private let timerFD: Int32
    private let pending = Mutex<[@Sendable () -> Void]>([])
    /// Task jobs enqueued from other threads.
    private let pendingJobs = Mutex(JobQueue())
    /// Task jobs enqueued on the loop thread itself: no lock and no wake-up needed.
    private var localJobs: [UnownedJob] = []
    /// The batch being run, kept to reuse its storage.
    private var runningJobs: [UnownedJob] = []
    /// Set on the loop thread once it stopped running; later jobs from that thread go to the global executor.
    private var localJobsClosed = false
    private let wakeRequested = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)
    private let threadID = Atomic<UInt>(0)

    private var handlers: [Int32: (id: UInt32, handler: any IOHandler)] = [:]
    private var nextRegistrationID: UInt32 = 1
    private var timers = TimerQueue()
    private var armedDeadline: UInt64 = .max
    private var endOfIteration: [() -> Void] = []
    private var thread: pthread_t?

    /// A test's manual clock in monotonic nanoseconds (`EventLoopGroup(loopCount:clock:)`); nil reads the system's.
    private let clock: (@Sendable () -> UInt64)?

    private static let wakeToken: UInt64 = .max
    private static let timerToken: UInt64 = .max - 1

    init(index: Int, clock: (@Sendable () -> UInt64)? = nil) throws {
        self.index = index
        self.clock = clock
        epollFD = try blockingSystemCall("epoll_create1") { rave_epoll_create() }
        wakeFD = try blockingSystemCall("eventfd") { rave_eventfd_create() }
        timerFD = try blockingSystemCall("timerfd_create") { rave_timerfd_create() }
        _ = try blockingSystemCall("epoll_ctl") {
            rave_epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, rave_epollin(), Self.wakeToken)
        }
        _ = try blockingSystemCall("epoll_ctl") {
            rave_epoll_ctl(epollFD, EPOLL_CTL_ADD, timerFD, rave_epollin(), Self.timerToken)
        }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        close(timerFD)
    }

    /// Monotonic nanoseconds as this loop's timers count them: the system's, or the manual clock a test gave.
    public func now() -> UInt64 {
        if let clock { return clock() }
        return monotonicNanoseconds()
    }

    /// Whether the caller runs on this loop's thread.
    public var isInLoop: Bool {
        threadID.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Runs `work` on the loop thread, soon; wakes the loop if it is waiting.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(work) }
        if !wakeRequested.exchange(true, ordering: .acquiringAndReleasing) {
            _ = rave_eventfd_signal(wakeFD)
        }
    }

    /// Stops the loop after the work already queued; returns at once.
    public func shutdown() {
        running.store(false, ordering: .releasing)
        _ = rave_eventfd_signal(wakeFD)
    }

    // MARK: - Descriptors

    /// Registers `fd` for `interest`; the handler is kept until `deregister`.
    public func register(fd: Int32, interest: IOEvents, handler: any IOHandler) throws -> IORegistration {
        assert(isInLoop, "register must run on the event loop")
        let id = nextRegistrationID
        nextRegistrationID &+= 1
        if nextRegistrationID == 0 { nextRegistrationID = 1 }
        let registration = IORegistration(fd: fd, id: id)
        _ = try blockingSystemCall("epoll_ctl(ADD)") {
            rave_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, Self.epollMask(interest), Self.token(registration))
        }
        handlers[fd] = (id, handler)
        return registration
    }

    /// Changes what a registered descriptor waits for.
    public func modify(_ registration: IORegistration, interest: IOEvents) throws {
        assert(isInLoop, "modify must run on the event loop")
        _ = try blockingSystemCall("epoll_ctl(MOD)") {
            rave_epoll_ctl(
                epollFD, EPOLL_CTL_MOD, registration.fd, Self.epollMask(interest), Self.token(registration))
        }
    }

    /// Forgets a descriptor; call before closing it.
    public func deregister(_ registration: IORegistration) {
        assert(isInLoop, "deregister must run on the event loop")
        guard let entry = handlers[registration.fd], entry.id == registration.id else { return }
        handlers[registration.fd] = nil
        _ = rave_epoll_ctl(epollFD, EPOLL_CTL_DEL, registration.fd, 0, 0)
    }

    /// Runs `work` on this loop after the events, queued work and timers of the current iteration.
    ///
    /// Writers use it to coalesce: many responses produced in one iteration leave in one flush.
    public func executeAtEndOfIteration(_ work: @escaping () -> Void) {
        assert(isInLoop, "executeAtEndOfIteration must run on the event loop")
        endOfIteration.append(work)
    }

    // MARK: - Timers

    /// Calls `callback` on the loop once `deadline` (monotonic nanoseconds) has passed.
    @discardableResult
    public func scheduleTimer(at deadline: UInt64, _ callback: @escaping () -> Void) -> TimerHandle {
        assert(isInLoop, "scheduleTimer must run on the event loop")
        let handle = timers.insert(deadline: deadline, callback: callback)
        armTimerDescriptor(for: deadline)
        return handle
    }

    /// Calls `callback` on the loop after `nanoseconds`.
    @discardableResult
    public func scheduleTimer(after nanoseconds: UInt64, _ callback: @escaping () -> Void) -> TimerHandle {
        scheduleTimer(at: now() &+ nanoseconds, callback)
    }

    /// Cancels a timer that has not fired; cancelling a fired or cancelled timer does nothing.
    public func cancelTimer(_ handle: TimerHandle) {
        assert(isInLoop, "cancelTimer must run on the event loop")
        timers.cancel(handle)
    }

    // MARK: - Running

    func start(name: String) throws {
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                let loop = Unmanaged<EventLoop>.fromOpaque(argument!).takeRetainedValue()
                loop.run()
                return nil
            }, box.toOpaque())
        guard result == 0 else {
            box.release()
            throw SystemCallError("pthread_create", errno: result)
        }
        self.thread = thread
        _ = name
    }

    func join() {
        if let thread { pthread_join(thread, nil) }
    }

    private func run() {
        threadID.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
        var events = [rave_epoll_event](repeating: rave_epoll_event(), count: 256)
        while running.load(ordering: .acquiring) {
            let timeout = localJobs.isEmpty && pendingIsEmpty() && endOfIteration.isEmpty ? -1 : 0
            let count = events.withUnsafeMutableBufferPointer {
                rave_epoll_wait(epollFD, $0.baseAddress, Int32($0.count), Int32(timeout))
            }
            if count < 0 {
                let code = Glibc.errno
                precondition(code == EINTR, "epoll_wait failed with errno \(code)")
                continue
            }
            for event in events[0..<Int(count)] {
                dispatch(event)
            }
            runPendingWork()
            fireDueTimers()
            runEndOfIteration()
        }
        runPendingWork()
        closeJobQueue()
        // Handlers get a final hangup so their descriptors are closed on this thread.
        for (_, entry) in handlers { entry.handler.handleEvents(.hangup) }
        handlers.removeAll()
    }

    private func dispatch(_ event: rave_epoll_event) {
        switch event.data {
        case Self.wakeToken:
            _ = rave_eventfd_drain(wakeFD)
        case Self.timerToken:
            _ = rave_timerfd_drain(timerFD)
            armedDeadline = .max
        default:
            let fd = Int32(truncatingIfNeeded: event.data & 0xffff_ffff)
            let id = UInt32(truncatingIfNeeded: event.data >> 32)
            guard let entry = handlers[fd], entry.id == id else { return }
            entry.handler.handleEvents(Self.ioEvents(event.events))
        }
    }

    private func pendingIsEmpty() -> Bool {
        pending.withLock { $0.isEmpty } && pendingJobs.withLock { $0.jobs.isEmpty }
    }

    private func runPendingWork() {
        // Clear the flag first so work queued while we run wakes the next iteration.
        wakeRequested.store(false, ordering: .releasing)
        let work = pending.withLock { queue -> [@Sendable () -> Void] in
            let taken = queue
            queue.removeAll(keepingCapacity: true)
            return taken
        }
        for item in work { item() }
        runJobs()
    }

    /// Runs the Task jobs queued so far; jobs they enqueue wait for the next iteration, so I/O is not starved.
    private func runJobs() {
        swap(&runningJobs, &localJobs)
        pendingJobs.withLock { queue in
            guard !queue.jobs.isEmpty else { return }
            runningJobs.append(contentsOf: queue.jobs)
            queue.jobs.removeAll(keepingCapacity: true)
        }
        guard !runningJobs.isEmpty else { return }
        let executor = asUnownedTaskExecutor()
        for job in runningJobs { job.runSynchronously(on: executor) }
        runningJobs.removeAll(keepingCapacity: true)
    }

    /// After the loop stopped, Tasks that still prefer it run on the global executor instead of never.
    private func closeJobQueue() {
        let orphans = pendingJobs.withLock { queue -> [UnownedJob] in
            queue.isClosed = true
            defer { queue.jobs = [] }
            return queue.jobs
        }
        localJobsClosed = true
        for job in localJobs + orphans { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        localJobs = []
    }

    private func runEndOfIteration() {
        while !endOfIteration.isEmpty {
            let work = endOfIteration
            endOfIteration.removeAll(keepingCapacity: true)
            for item in work { item() }
        }
    }

    /// Runs the due timers and arms the timer descriptor for an earlier deadline than the armed one.
    ///
    /// A later one waits: when the earliest timer is cancelled (a call answered before its deadline, the usual
    /// case) the descriptor stays armed for the cancelled deadline and fires once for nothing, and only then is
    /// it armed for the next. That wake-up is rare, since deadlines are seconds away and calls take milliseconds;
    /// re-arming at every cancellation cost a `timerfd_settime` for nearly every call when many are in flight.
    private func fireDueTimers() {
        let now = self.now()
        while let callback = timers.popDue(now: now) { callback() }
        if let next = timers.nextDeadline { armTimerDescriptor(for: next) }
    }

    /// Arms the timer descriptor for `deadline` when it is earlier than the armed one.
    ///
    /// Under a manual clock the descriptor stays unarmed: its deadlines are not the system's, and timers fire when
    /// the test advances the clock and wakes the loop.
    private func armTimerDescriptor(for deadline: UInt64) {
        guard clock == nil, deadline < armedDeadline else { return }
        armedDeadline = deadline
        _ = rave_timerfd_arm(timerFD, max(deadline, 1))
    }

    private static func token(_ registration: IORegistration) -> UInt64 {
        UInt64(registration.id) << 32 | UInt64(UInt32(bitPattern: registration.fd))
    }

    private static func epollMask(_ interest: IOEvents) -> UInt32 {
        var mask = rave_epollrdhup()
        if interest.contains(.readable) { mask |= rave_epollin() }
        if interest.contains(.writable) { mask |= rave_epollout() }
        return mask
    }

    private static func ioEvents(_ mask: UInt32) -> IOEvents {
        var events: IOEvents = []
        if mask & rave_epollin() != 0 { events.insert(.readable) }
        if mask & rave_epollout() != 0 { events.insert(.writable) }
        if mask & (rave_epollhup() | rave_epollrdhup()) != 0 { events.insert(.hangup) }
        if mask & rave_epollerr() != 0 { events.insert(.error) }
        return events
    }
}

extension EventLoop: TaskExecutor {
    /// Queues a Task job to run on the loop thread; from the loop itself it costs an array append.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if isInLoop, !localJobsClosed {
            localJobs.append(job)
            return
        }
        let accepted = pendingJobs.withLock { queue in
            guard !queue.isClosed else { return false }
            queue.jobs.append(job)
            return true
        }
        guard accepted else {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        if !wakeRequested.exchange(true, ordering: .acquiringAndReleasing) {
            _ = rave_eventfd_signal(wakeFD)
        }
    }
}

/// Task jobs handed to a loop from other threads; closed when the loop stops.
private struct JobQueue {
    var jobs: [UnownedJob] = []
    var isClosed = false
}

/// A fixed set of event loops, one thread each; new connections are spread over them round robin.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)

    /// Starts `count` loops (default: one per core).
    ///
    /// `clock`, for tests only, replaces the system's monotonic nanoseconds for the loops' timers (`EventLoop.now()`):
    /// timers then fire only when the test moves that clock and wakes the loops.
    public init(loopCount count: Int = System.coreCount, clock: (@Sendable () -> UInt64)? = nil) throws {
        precondition(count > 0, "an event loop group needs at least one loop")
        var loops: [EventLoop] = []
        for index in 0..<count {
            let loop = try EventLoop(index: index, clock: clock)
            try loop.start(name: "rave-loop-\(index)")
            loops.append(loop)
        }
        self.loops = loops
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        loops[nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// Stops every loop and waits for their threads to end.
    public func shutdown() {
        for loop in loops { loop.shutdown() }
        for loop in loops { loop.join() }
    }
}

/// Facts about the machine.
public enum System {
    /// Online processor cores.
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
