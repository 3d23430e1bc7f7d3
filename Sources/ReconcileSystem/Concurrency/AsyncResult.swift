import Dispatch
import Synchronization

/// Waits, on a thread of the caller's own, for async work to finish: how code that runs on a
/// plain thread (a control-socket connection) asks an actor something.
///
/// Never call it from Swift's cooperative pool: it blocks the calling thread until the work is
/// done, and the work itself needs a pool thread to run.
public enum AsyncResult {
    public static func wait<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
        // Called from a task, the wait would block one of the pool's threads (two on a
        // two-core machine) until a task on that pool ran: a stall, or a deadlock when every
        // thread waits so. Debug builds (the tests) stop at the mistake.
        assert(withUnsafeCurrentTask { $0 == nil }, "AsyncResult.wait called from a task, on Swift's cooperative pool")
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await operation()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0.take()! }
    }
}
