import Synchronization

/// A ``Service`` for a part that runs by itself once set up (the control socket's accept thread,
/// an inotify watch): ``run()`` holds its place in the group until it is stopped, and
/// ``stop()`` tears the part down.
public final class HeldService: Service {
    public let name: String
    private let teardown: @Sendable () async -> Void
    private let stopped = WakeSignal(clock: SystemClock())  // waits without a deadline
    private let done = Atomic<Bool>(false)

    public init(_ name: String, teardown: @escaping @Sendable () async -> Void) {
        self.name = name
        self.teardown = teardown
    }

    public func run() async throws {
        while !done.load(ordering: .acquiring) { await stopped.wait(until: nil) }
    }

    public func stop() async {
        await teardown()
        done.store(true, ordering: .releasing)
        stopped.signal()
    }
}
