import Foundation
import ReconcileFoundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem

/// The signal on a clock the test moves: deadlines come when the test says, never by real time.
@Suite("Wake signal")
struct WakeSignalTests {
    @Test("a signal given before the wait ends it at once; several coalesce into one")
    func signalBeforeWait() async throws {
        let clock = ManualClock()
        let signal = WakeSignal(clock: clock)
        signal.signal()
        signal.signal()
        // An hour's wait, and the clock never moves: only the pending signal can end it.
        await signal.wait(until: clock.instant() + .seconds(3_600))
        // The two signals were one: the next wait lasts until its deadline.
        let ended = Atomic<Bool>(false)
        let next = Task {
            await signal.wait(until: clock.instant() + .milliseconds(300))
            ended.store(true, ordering: .releasing)
        }
        await clock.waitForTimers()
        clock.advance(by: .milliseconds(299))
        let endedEarly = ended.load(ordering: .acquiring)
        #expect(!endedEarly, "a second signal was kept")
        clock.advance(by: .milliseconds(1))
        await next.value
    }

    @Test("a wait ends at its deadline, not before")
    func deadline() async throws {
        let clock = ManualClock()
        let signal = WakeSignal(clock: clock)
        let start = clock.instant()
        let ended = Atomic<Bool>(false)
        let waiting = Task {
            await signal.wait(until: start + .milliseconds(200))
            ended.store(true, ordering: .releasing)
        }
        await clock.waitForTimers()
        #expect(clock.pendingDeadlines == [start + .milliseconds(200)])
        clock.advance(by: .milliseconds(199))
        let endedEarly = ended.load(ordering: .acquiring)
        #expect(!endedEarly, "the wait ended before its deadline")
        #expect(signal.hasWaiter)
        clock.advance(by: .milliseconds(1))
        await waiting.value
        #expect(clock.pendingDeadlines.isEmpty)
    }

    @Test("a deadline already passed ends the wait at once")
    func passedDeadline() async throws {
        let clock = ManualClock()
        let signal = WakeSignal(clock: clock)
        await signal.wait(until: clock.instant() - .seconds(1))
        #expect(!signal.hasWaiter)
        #expect(clock.pendingDeadlines.isEmpty)
    }

    @Test("a signal during a wait ends it and cancels its timer; that wait's deadline, firing late, does not end the next wait")
    func signalDuringWait() async throws {
        let clock = ManualClock()
        let signal = WakeSignal(clock: clock)
        let waiting = Task { await signal.wait(until: clock.instant() + .seconds(3_600)) }
        await clock.waitForTimers()
        let stale = signal.generation
        signal.signal()
        await waiting.value
        #expect(!signal.hasWaiter)
        #expect(clock.pendingDeadlines.isEmpty, "the ended wait's timer is still pending")

        let next = Task { await signal.wait(until: clock.instant() + .seconds(3_600)) }
        await clock.waitForTimers()
        // The first wait's timer fires after all (cancelled too late): the next wait goes on.
        signal.expire(stale)
        #expect(signal.hasWaiter, "a stale deadline ended a later wait")
        clock.advance(by: .seconds(3_600))
        await next.value
        #expect(!signal.hasWaiter, "its own deadline did not end the wait")
    }
}
