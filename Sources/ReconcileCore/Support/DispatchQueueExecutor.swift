import Dispatch

/// A serial executor on its own dispatch queue: an actor that does blocking I/O (SQLite with
/// `synchronous=FULL`, file reads) runs there instead of holding one of the few cooperative
/// threads.
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

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
