import Foundation
import Glibc
import ReconcileFoundation

/// The progress of a long verb on standard error: `retry: 1,500 of 10,000 (15%), 2,300/s, 4s
/// left`, redrawn in place at most five times a second, and erased at the end. Silent unless
/// standard error is a terminal (DESIGN §10), so that scripts and logs get only the result.
struct ProgressLine {
    let label: String
    let total: Int
    let output: any CommandOutput
    let enabled: Bool
    private let now: () -> Date
    private let started: Date
    private var drawn: Date?

    init(label: String, total: Int, output: any CommandOutput, now: @escaping () -> Date = Date.init) {
        self.label = label
        self.total = total
        self.output = output
        self.now = now
        enabled = output.errorIsTerminal && total > 0
        started = now()
    }

    /// The text for `done` of `total` after `elapsed` seconds.
    static func text(label: String, done: Int, total: Int, elapsed: TimeInterval) -> String {
        let percent = total > 0 ? done * 100 / total : 100
        var text = "\(label): \(Number.grouped(done)) of \(Number.grouped(total)) (\(percent)%)"
        if elapsed >= 0.5, done > 0 {
            let rate = Double(done) / elapsed
            text += ", \(Number.grouped(Int(rate.rounded())))/s"
            if done < total {
                text += ", \(TimeSpan.format(.seconds(Int((Double(total - done) / rate).rounded(.up))))) left"
            }
        }
        return text
    }

    /// Redraws the line for `done` orders (not more often than five times a second, but always
    /// for the last).
    mutating func update(done: Int) {
        guard enabled else { return }
        let time = now()
        if let drawn, time.timeIntervalSince(drawn) < 0.2, done < total { return }
        drawn = time
        output.err("\r\u{1B}[K" + Self.text(label: label, done: done, total: total, elapsed: time.timeIntervalSince(started)))
    }

    /// The size of a file, 0 when it cannot be read: what a copy being written has reached.
    static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Erases the line.
    func finish() {
        guard enabled, drawn != nil else { return }
        output.err("\r\u{1B}[K")
    }
}
