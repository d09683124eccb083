import CRaveSystem
import Glibc

/// An operating-system call that failed, with the errno it left and the function's name.
public struct SystemCallError: Error, CustomStringConvertible, Sendable {
    public var function: String
    public var errno: Int32

    public init(_ function: String, errno: Int32) {
        self.function = function
        self.errno = errno
    }

    public var description: String {
        "\(function) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The result of a non-blocking call that may have to wait.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Runs a system call: retries `EINTR`, maps `EAGAIN` to `.wouldBlock`, and throws on other failures.
///
/// `EBADF` and `EFAULT` are programming errors (a closed or invalid descriptor, a bad pointer), so they
/// stop the process instead of being reported as ordinary I/O failures.
@inline(__always)
public func systemCall<T: FixedWidthInteger>(
    _ function: @autoclosure () -> String,
    _ body: () -> T
) throws(SystemCallError) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .processed(result) }
        let code = Glibc.errno
        switch code {
        case EINTR: continue
        case EAGAIN: return .wouldBlock
        case EBADF, EFAULT: preconditionFailure("\(function()) failed with errno \(code): a descriptor or pointer bug")
        default: throw SystemCallError(function(), errno: code)
        }
    }
}

/// Like `systemCall`, for calls that never legitimately block.
@inline(__always)
public func blockingSystemCall<T: FixedWidthInteger>(
    _ function: @autoclosure () -> String,
    _ body: () -> T
) throws(SystemCallError) -> T {
    switch try systemCall(function(), body) {
    case .processed(let value): return value
    case .wouldBlock: throw SystemCallError(function(), errno: EAGAIN)
    }
}

/// Monotonic time in nanoseconds, the clock every deadline in the process uses.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 { rave_monotonic_ns() }
