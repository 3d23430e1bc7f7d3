import Glibc

/// A failed system call: which call, on which path, and `errno`, in words.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var errno: Int32
    /// The call or step that failed (`open`, `rename`, `fsync`).
    public var operation: String
    public var path: String?

    public init(errno: Int32, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    /// The current `errno`, for a call that just failed.
    public static func current(_ operation: String, path: String? = nil) -> SystemError {
        SystemError(errno: Glibc.errno, operation: operation, path: path)
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }

    public var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }
    public var isReadOnly: Bool { errno == EROFS }
    public var isNotFound: Bool { errno == ENOENT }
}

/// Runs a system call, retrying on `EINTR`, and throws ``SystemError`` when it returns -1.
@discardableResult
public func retryingOnInterrupt<T: BinaryInteger>(
    _ operation: String, path: String? = nil, _ call: () -> T
) throws(SystemError) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        if errno == EINTR { continue }
        throw SystemError.current(operation, path: path)
    }
}
