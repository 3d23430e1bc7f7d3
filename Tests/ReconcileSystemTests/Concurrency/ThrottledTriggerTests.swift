import Foundation
import ReconcileFoundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem

/// The trigger on a clock the test moves: each step asserts what has run at that clock time.
@Suite("Throttled trigger")
struct ThrottledTriggerTests {
    /// When (on the test's clock) the action ran, in order.
    final class Runs: Sendable {
        private let times = Mutex<[ContinuousClock.Instant]>([])
        let clock: ManualClock
        init(clock: ManualClock) { self.clock = clock }
        func record() { times.withLock { $0.append(clock.instant()) } }
        var all: [ContinuousClock.Instant] { times.withLock { $0 } }
        var count: Int { all.count }
    }

    /// Returns once the trigger's loop waits for a change (it has finished a run and its pause).
    func idle(_ trigger: ThrottledTrigger) async -> Bool {
        await eventually { trigger.signal.hasWaiter }
    }

    @Test("a burst of changes runs the action at once and then once more after the pause; no change, no run")
    func coalesces() async throws {
        let clock = ManualClock()
        let trigger = ThrottledTrigger(interval: .milliseconds(300), clock: clock)
        let runs = Runs(clock: clock)
        let task = Task { await trigger.run { runs.record() } }
        #expect(await idle(trigger))
        clock.advance(by: .seconds(3_600))
        #expect(runs.count == 0, "ran without a change")

        let burst = clock.instant()
        for _ in 0..<100 { trigger.changed() }
        // The first change runs the action at once; it then pauses 300 ms on the clock.
        await clock.waitForTimers()
        #expect(runs.all == [burst])
        clock.advance(by: .milliseconds(299))
        #expect(runs.count == 1, "ran again before the pause was over")
        // The rest of the burst coalesced into one more run, when the pause ends.
        clock.advance(by: .milliseconds(1))
        await clock.waitForTimers()
        #expect(runs.all == [burst, burst + .milliseconds(300)])
        clock.advance(by: .milliseconds(300))
        #expect(await idle(trigger))
        clock.advance(by: .seconds(3_600))
        #expect(runs.count == 2, "ran again without a change")

        task.cancel()
        await task.value
        #expect(runs.count == 3, "cancelling runs the action a last time")
    }

    @Test("changes while the action runs, or during the pause, run it once more after the pause")
    func duringPause() async throws {
        let clock = ManualClock()
        let trigger = ThrottledTrigger(interval: .milliseconds(400), clock: clock)
        let runs = Runs(clock: clock)
        let task = Task { await trigger.run { runs.record() } }
        let start = clock.instant()
        trigger.changed()
        await clock.waitForTimers()
        clock.advance(by: .milliseconds(100))
        trigger.changed()
        trigger.changed()
        #expect(runs.count == 1)
        clock.advance(by: .milliseconds(300))
        await clock.waitForTimers()
        #expect(runs.all == [start, start + .milliseconds(400)])
        task.cancel()
        await task.value
    }

    /// Were the last run to wait for the pause, it would wait for a clock nobody moves: the
    /// time limit turns that into a failure.
    @Test("cancelled while the action runs: it runs once more, after the cancellation, without the pause", .timeLimit(.minutes(1)))
    func cancelDuringAction() async throws {
        let clock = ManualClock()
        let trigger = ThrottledTrigger(interval: .seconds(30), clock: clock)
        let runs = Runs(clock: clock)
        let gate = WakeSignal(clock: clock)
        let cancelled = Atomic<Bool>(false)
        let ranAfterCancel = Atomic<Bool>(false)
        let task = Task {
            await trigger.run {
                runs.record()
                if runs.count == 1 {
                    await gate.wait(until: nil)  // a slow first run, deaf to cancellation
                } else {
                    ranAfterCancel.store(cancelled.load(ordering: .acquiring), ordering: .releasing)
                }
            }
        }
        trigger.changed()
        #expect(await eventually { gate.hasWaiter })
        task.cancel()
        cancelled.store(true, ordering: .releasing)
        gate.signal()
        await task.value
        #expect(runs.count == 2)
        let lastRunAfterCancel = ranAfterCancel.load(ordering: .acquiring)
        #expect(lastRunAfterCancel, "the last run started before the cancellation")
    }
}
