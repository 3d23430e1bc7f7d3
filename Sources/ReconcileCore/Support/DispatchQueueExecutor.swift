import Dispatch

/// A serial executor on its own dispatch queue: an actor that does blocking I/O (SQLite with
/// `synchronous=FULL`, file reads) runs there instead of holding one of the few cooperative
/// threads. A store's writer thread is one (``SerializedStore/executor``).
public final class DispatchQueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    public init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async {
            job.runSynchronously(on: executor)
        }
    }

    /// Runs `body` on the queue, after the jobs enqueued before it, and returns what it
    /// returned; the awaiting task holds no thread meanwhile.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
