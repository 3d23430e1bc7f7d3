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

    @Test("a signal during a long wait ends it, and the old deadline does not end a later wait")
    func signalDuringWait() async throws {
        let signal = WakeSignal()
        let waiting = Task { await signal.wait(until: .now + .milliseconds(400)) }
        try await Task.sleep(for: .milliseconds(100))
        let signalled = ContinuousClock.now
        signal.signal()
        await waiting.value
        #expect(ContinuousClock.now - signalled < .seconds(30), "the signal did not end a 400 ms wait")
        // The first wait's 400 ms deadline passes during this one, which must not end early.
        let second = ContinuousClock.now
        await signal.wait(until: second + .milliseconds(800))
        #expect(ContinuousClock.now - second >= .milliseconds(800))
    }
}
