import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The scheduler's attempts as tasks it owns: cancelled and awaited when its loop ends.
@Suite("Attempt tasks")
struct AttemptTasksTests {
    /// Records how each attempt ended.
    final class Ends: Sendable {
        let ended = Mutex<[String]>([])
        func add(_ what: String) { ended.withLock { $0.append(what) } }
        var all: [String] { ended.withLock { $0 } }
    }

    /// An attempt that runs until its task is cancelled (never on its own).
    static func untilCancelled(_ name: String, _ ends: Ends) -> @Sendable () async -> Void {
        {
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            for await _ in stream {}  // ends when the task is cancelled (nothing is ever yielded)
            withExtendedLifetime(continuation) {}  // the stream must not finish on its own
            ends.add(name)
        }
    }

    @Test("closing cancels every attempt still running and returns once all have ended; a finished one leaves the registry")
    func closeCancelsAndAwaits() async {
        let tasks = AttemptTasks()
        let ends = Ends()
        tasks.start { ends.add("quick") }
        #expect(await eventually(every: .milliseconds(5)) { tasks.count == 0 && ends.all == ["quick"] })
        for name in ["a", "b", "c"] { tasks.start(Self.untilCancelled(name, ends)) }
        #expect(tasks.count == 3)
        await tasks.closeAndCancel()
        #expect(Set(ends.all) == ["quick", "a", "b", "c"], "closeAndCancel returned before every attempt ended")
        #expect(tasks.count == 0)
    }

    @Test("an attempt started after closing is cancelled from the start")
    func startAfterClose() async {
        let tasks = AttemptTasks()
        await tasks.closeAndCancel()
        let ends = Ends()
        tasks.start(Self.untilCancelled("late", ends))
        #expect(await eventually(every: .milliseconds(5)) { ends.all == ["late"] })
    }
}
