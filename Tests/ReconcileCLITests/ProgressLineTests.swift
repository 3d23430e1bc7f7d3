import Foundation
import Testing
@testable import ReconcileCLI

/// The progress line long verbs draw on standard error: only on a terminal, at most five times
/// a second, always the last, erased at the end.
@Suite("Progress line")
struct ProgressLineTests {
    @Test("done of total, percent, rate and time left once half a second has passed")
    func text() {
        #expect(ProgressLine.text(label: "hold", done: 250, total: 10_000, elapsed: 0.1) == "hold: 250 of 10,000 (2%)")
        #expect(ProgressLine.text(label: "hold", done: 2_500, total: 10_000, elapsed: 2) == "hold: 2,500 of 10,000 (25%), 1,250/s, 6s left")
        #expect(ProgressLine.text(label: "copy-store", done: 10_000, total: 10_000, elapsed: 4) == "copy-store: 10,000 of 10,000 (100%), 2,500/s")
        #expect(ProgressLine.text(label: "x", done: 0, total: 0, elapsed: 1) == "x: 0 of 0 (100%)")
    }

    @Test("silent without a terminal; on one, redrawn in place at most five times a second and erased")
    func drawing() {
        final class Clock: @unchecked Sendable {
            // @unchecked: one test at a time.
            var now = Date(timeIntervalSince1970: 1_800_000_000)
        }
        let clock = Clock()
        let piped = CapturedOutput(errorIsTerminal: false)
        var silent = ProgressLine(label: "hold", total: 1_000, output: piped) { clock.now }
        silent.update(done: 500)
        silent.finish()
        #expect(piped.standardError.isEmpty)

        let terminal = CapturedOutput(errorIsTerminal: true)
        var line = ProgressLine(label: "hold", total: 1_000, output: terminal) { clock.now }
        line.update(done: 250)
        clock.now += 0.1
        line.update(done: 500)  // within 0.2 s of the last: not drawn
        clock.now += 0.9
        line.update(done: 1_000)  // the last is always drawn
        line.finish()
        #expect(terminal.standardError == "\r\u{1B}[Khold: 250 of 1,000 (25%)\r\u{1B}[Khold: 1,000 of 1,000 (100%), 1,000/s\r\u{1B}[K")
    }
}
