import Synchronization

/// The scheduler's attempts in flight, as tasks it owns: each starts at once, off the
/// scheduler's executor, and when ``Scheduler/run()`` ends those still running are cancelled
/// and awaited (``closeAndCancel()``), so that no attempt outlives the loop that started it.
///
/// Not a task group fed through a stream: handing each attempt to the group's body cost about
/// a tenth more daemon CPU per order at 0 ms (`reconcile-bench e2e`, side by side, median of
/// six runs); a registry under a mutex gives the same guarantees for a lock and a dictionary
/// entry per attempt, at no cost the benchmark can tell from noise.
final class AttemptTasks: Sendable {
    private struct State {
        var next = 0
        var running: [Int: Task<Void, Never>] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// Starts `body` as a task of its own, unless the registry is closed (then it is cancelled
    /// from the start, and ``closeAndCancel()``'s caller has already stopped waiting).
    func start(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            let id = state.next
            state.next += 1
            let task = Task.detached { [self] in
                await body()
                _ = self.state.withLock { $0.running.removeValue(forKey: id) }
            }
            // The task cannot remove itself before this lock is let go: it finds itself here.
            if state.closed {
                task.cancel()
            } else {
                state.running[id] = task
            }
        }
    }

    /// How many attempts are running.
    var count: Int { state.withLock { $0.running.count } }

    /// Starts no more; cancels every attempt still running and returns when all have ended.
    func closeAndCancel() async {
        let running = state.withLock { state in
            state.closed = true
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }
}
