import Glibc

/// The process signals a service reacts to.
public enum ProcessSignal: Sendable, CaseIterable {
    /// Graceful shutdown (what orchestrators send).
    case terminate
    /// Graceful shutdown (Ctrl-C).
    case interrupt
    /// Reload certificates and other files without restarting.
    case hangup

    /// The signal with POSIX number `number`, if it is one of these.
    public init?(number: Int32) {
        switch number {
        case SIGTERM: self = .terminate
        case SIGINT: self = .interrupt
        case SIGHUP: self = .hangup
        default: return nil
        }
    }

    /// The POSIX signal number.
    public var number: Int32 {
        switch self {
        case .terminate: SIGTERM
        case .interrupt: SIGINT
        case .hangup: SIGHUP
        }
    }

    public var name: String {
        switch self {
        case .terminate: "SIGTERM"
        case .interrupt: "SIGINT"
        case .hangup: "SIGHUP"
        }
    }
}

/// Delivers SIGTERM, SIGINT and SIGHUP to a Swift callback, from a thread that does nothing but `sigwait`.
///
/// Why a `sigwait` thread: a signal handler may only call async-signal-safe functions, so it cannot run Swift
/// code; a dedicated thread turns the signal into an ordinary call with no such limits, needs no C shim, and keeps
/// working while every event loop and the cooperative pool are busy. (A signalfd on an event loop would do the
/// same but tie signal delivery to a loop the shutdown itself stops; DispatchSource needs the signals ignored, which
/// drops one sent before the source is ready.) For `sigwait` to see a signal, every thread must block it, so
/// `blockSignals()` runs first thing in `main`, before any thread is started: threads inherit the mask.
public enum SignalWatcher {
    /// Blocks the watched signals in the calling thread and every thread it starts afterwards.
    public static func blockSignals() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts the watcher thread; `handler` runs on it once per signal received, for the life of the process.
    public static func start(_ handler: @escaping @Sendable (ProcessSignal) -> Void) throws(RuntimeError) {
        blockSignals()
        let box = Unmanaged.passRetained(HandlerBox(handler))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                let handler = Unmanaged<HandlerBox>.fromOpaque(argument!).takeRetainedValue().handler
                var set = SignalWatcher.signalSet()
                while true {
                    var number: Int32 = 0
                    guard sigwait(&set, &number) == 0 else { continue }
                    if let signal = ProcessSignal(number: number) { handler(signal) }
                }
            }, box.toOpaque())
        guard result == 0 else {
            box.release()
            throw RuntimeError(.startupFailed, "cannot start the signal thread: pthread_create returned \(result)")
        }
        pthread_detach(thread)
    }

    static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in ProcessSignal.allCases { sigaddset(&set, signal.number) }
        return set
    }

    private final class HandlerBox {
        let handler: @Sendable (ProcessSignal) -> Void
        init(_ handler: @escaping @Sendable (ProcessSignal) -> Void) { self.handler = handler }
    }
}
