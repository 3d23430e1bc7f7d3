import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Throttled trigger")
struct ThrottledTriggerTests {
    /// When the action ran, in order.
    final class Runs: Sendable {
        private let times = Mutex<[ContinuousClock.Instant]>([])
        func record() { times.withLock { $0.append(.now) } }
        var all: [ContinuousClock.Instant] { times.withLock { $0 } }
        var count: Int { all.count }
    }

    @Test("a burst of changes runs the action at once and then once more after the pause; no change, no run")
    func coalesces() async throws {
        let trigger = ThrottledTrigger(interval: .milliseconds(300))
        let runs = Atomic<Int>(0)
        let task = Task { await trigger.run { runs.add(1, ordering: .relaxed) } }
        try await Task.sleep(for: .milliseconds(200))
        #expect(runs.load(ordering: .relaxed) == 0, "ran without a change")
        for _ in 0..<100 { trigger.changed() }
        // The burst's first change runs the action at once; the rest coalesce into one more run
        // after the pause (a poll may come late, so count at least, then settle).
        #expect(await eventually(timeout: .seconds(30)) { runs.load(ordering: .relaxed) >= 1 })
        try await Task.sleep(for: .milliseconds(1500))
        let settled = runs.load(ordering: .relaxed)
        #expect((1...2).contains(settled), "\(settled) runs for one burst")
        try await Task.sleep(for: .milliseconds(700))
        #expect(runs.load(ordering: .relaxed) == settled, "ran again without a change")
        for _ in 0..<100 { trigger.changed() }
        #expect(await eventually(timeout: .seconds(30)) { runs.load(ordering: .relaxed) > settled })
        try await Task.sleep(for: .milliseconds(1500))
        let afterSecond = runs.load(ordering: .relaxed)
        #expect(afterSecond - settled <= 2, "\(afterSecond - settled) runs for the second burst")
        task.cancel()
        await task.value
        #expect(runs.load(ordering: .relaxed) == afterSecond + 1, "cancelling runs the action a last time")
    }

    @Test("changes while the action runs, or during the pause, run it once more after the pause")
    func duringPause() async throws {
        let trigger = ThrottledTrigger(interval: .milliseconds(400))
        let runs = Runs()
        let task = Task { await trigger.run { runs.record() } }
        trigger.changed()
        #expect(await eventually(timeout: .seconds(30)) { runs.count == 1 })
        trigger.changed()
        trigger.changed()
        #expect(await eventually(timeout: .seconds(30)) { runs.count == 2 })
        let times = runs.all
        if times.count >= 2 { #expect(times[1] - times[0] >= .milliseconds(400)) }
        task.cancel()
        await task.value
    }

    @Test("cancelled while the action runs: it runs once more, after the cancellation, without the pause")
    func cancelDuringAction() async throws {
        let trigger = ThrottledTrigger(interval: .seconds(30))
        let runs = Runs()
        let gate = WakeSignal()
        let task = Task {
            await trigger.run {
                runs.record()
                if runs.count == 1 { await gate.wait(until: nil) }  // a slow first run, deaf to cancellation
            }
        }
        trigger.changed()
        #expect(await eventually(timeout: .seconds(30)) { runs.count == 1 })
        task.cancel()
        let cancelled = ContinuousClock.now
        gate.signal()
        await task.value
        let times = runs.all
        #expect(times.count == 2)
        if times.count == 2 { #expect(times[1] > cancelled) }
    }
}
