import ReconcileSystem
import Synchronization
import Testing
import TestSupport

@Suite("Throttled trigger")
struct ThrottledTriggerTests {
    @Test("a burst of changes runs the action at once and then once more after the pause; no change, no run")
    func coalesces() async throws {
        let trigger = ThrottledTrigger(interval: .milliseconds(300))
        let runs = Atomic<Int>(0)
        let task = Task { await trigger.run { runs.add(1, ordering: .relaxed) } }
        try await Task.sleep(for: .milliseconds(200))
        #expect(runs.load(ordering: .relaxed) == 0, "ran without a change")
        for _ in 0..<100 { trigger.changed() }
        #expect(await eventually(timeout: .seconds(5)) { runs.load(ordering: .relaxed) == 1 })
        for _ in 0..<100 { trigger.changed() }  // during the pause: one more run after it
        #expect(await eventually(timeout: .seconds(5)) { runs.load(ordering: .relaxed) == 2 })
        try await Task.sleep(for: .milliseconds(400))
        #expect(runs.load(ordering: .relaxed) == 2, "ran again without a change")
        task.cancel()
        await task.value
        #expect(runs.load(ordering: .relaxed) == 3, "cancelling runs the action a last time")
    }
}
