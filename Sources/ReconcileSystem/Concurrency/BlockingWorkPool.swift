import Foundation

/// A fixed set of threads for blocking system calls that gain from running side by side
/// (unlinking files on a filesystem that discards freed blocks synchronously, for one), so that
/// they neither hold the cooperative threads nor serialise behind one another.
///
/// The threads end when the pool is released.
public final class BlockingWorkPool: Sendable {
    /// What the threads share; they hold it, not the pool, so that releasing the pool stops them.
    private final class State: @unchecked Sendable {
        // @unchecked: every mutable member is accessed with `condition` locked.
        let condition = NSCondition()
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var running = 0
        var stopped = false

        var isEmpty: Bool { head == queue.count }

        func work() {
            condition.lock()
            while true {
                while isEmpty && !stopped { condition.wait() }
                if isEmpty && stopped { break }
                let next = queue[head]
                head += 1
                if head == queue.count {
                    queue.removeAll(keepingCapacity: true)
                    head = 0
                }
                running += 1
                condition.unlock()
                next()
                condition.lock()
                running -= 1
                condition.broadcast()
            }
            condition.unlock()
        }
    }

    private let state = State()

    public init(threads count: Int, name: String) {
        precondition(count > 0)
        for index in 0..<count {
            let thread = Thread { [state] in state.work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    deinit {
        state.condition.lock()
        state.stopped = true
        state.condition.broadcast()
        state.condition.unlock()
    }

    /// Queues `work` for the next free thread.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        state.condition.lock()
        state.queue.append(work)
        state.condition.signal()
        state.condition.unlock()
    }

    /// Blocks until everything submitted so far has run.
    public func waitUntilIdle() {
        state.condition.lock()
        while !state.isEmpty || state.running > 0 { state.condition.wait() }
        state.condition.unlock()
    }
}
