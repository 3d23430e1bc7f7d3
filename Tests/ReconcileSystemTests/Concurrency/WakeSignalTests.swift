import Foundation
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Wake signal")
struct WakeSignalTests {
    @Test("a signal given before the wait ends it at once; several coalesce into one")
    func signalBeforeWait() async throws {
        let signal = WakeSignal()
        signal.signal()
        signal.signal()
        let start = ContinuousClock.now
        await signal.wait(until: .now + .seconds(3_600))
        #expect(ContinuousClock.now - start < .seconds(30), "a pending signal did not end an hour's wait")
        // The two signals were one: the next wait lasts until its deadline.
        let second = ContinuousClock.now
        await signal.wait(until: .now + .milliseconds(300))
        #expect(ContinuousClock.now - second >= .milliseconds(300))
    }

    @Test("a wait ends at its deadline")
    func deadline() async throws {
        let signal = WakeSignal()
        let start = ContinuousClock.now
        await signal.wait(until: start + .milliseconds(200))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(200) && waited < .seconds(30), "waited \(waited)")
    }

    @Test("a signal during a wait ends it; that wait's deadline, firing late, does not end the next wait")
    func signalDuringWait() async throws {
        let signal = WakeSignal()
        // Hour-long deadlines: only the signal can end these waits, however loaded the machine.
        let waiting = Task { await signal.wait(until: .now + .seconds(3_600)) }
        // Signalled once it waits (a signal with nobody waiting is kept for the next wait).
        #expect(await eventually(timeout: .seconds(30)) { signal.hasWaiter })
        let stale = signal.generation
        signal.signal()
        await waiting.value
        #expect(!signal.hasWaiter)

        let next = Task { await signal.wait(until: .now + .seconds(3_600)) }
        #expect(await eventually(timeout: .seconds(30)) { signal.hasWaiter })
        // The first wait's timer fires after all (cancelled too late): the next wait goes on.
        signal.expire(stale)
        #expect(signal.hasWaiter, "a stale deadline ended a later wait")
        signal.expire(signal.generation)
        await next.value
        #expect(!signal.hasWaiter, "its own deadline did not end the wait")
    }
}
