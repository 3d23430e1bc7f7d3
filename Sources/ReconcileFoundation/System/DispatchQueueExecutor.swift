import Dispatch

/// A serial executor on its own dispatch queue: an actor that does blocking I/O (SQLite with
/// `synchronous=FULL`, file reads) runs there instead of holding one of the few cooperative
/// threads. A store's writer thread is one (``SerializedStore/executor``).
public final class DispatchQueueExecutor: SerialExecutor {
    private let queue: DispatchQueue
    /// Marks the queue, so that ``sync(_:)`` knows when it is already on it.
    private let key = DispatchSpecificKey<Bool>()

    public init(label: String) {
        self.queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
    }

    /// Whether the calling code runs on this queue: a job of an actor on it, or a block sent
    /// to it.
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    /// Runs `body` on the queue's turn, after the jobs enqueued before it, and waits for it; at
    /// once when the caller is already on the queue. For code on a thread of its own (the
    /// control socket's) or already on the queue; an async caller uses ``run(_:)``.
    public func sync<T>(_ body: () throws -> T) rethrows -> T {
        isCurrent ? try body() : try queue.sync(execute: body)
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
