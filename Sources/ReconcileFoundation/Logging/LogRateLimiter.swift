import Foundation
import Synchronization

/// Per-`MESSAGE_ID` rate limiting (DESIGN §8): at most `burst` records of one kind per
/// `interval`; what is held back is counted and reported in one "suppressed N" record when the
/// window has passed.
///
/// A kind is the record's message id or, for a record without one, the place in the code that
/// logged it (`CODE_FILE`:`CODE_LINE`), so a line logged once per spool file is limited whether
/// or not it has an id, and whatever its level: a flood of `err` lines would otherwise push the
/// service over journald's own limit, which then drops what matters (escalations) with the rest.
/// Only `crit` (start-up failures, never repeated) and `debug` (asked for by the operator, who
/// wants every line) pass unlimited. The summary carries the most severe level it held back, so
/// `journalctl -p err` still shows that errors were suppressed.
public final class RateLimitingLogHandler: LogHandler {
    /// What one limit counts.
    enum Key: Hashable {
        case id(MessageID)
        case site(file: String, line: UInt)
    }

    private struct Window {
        var start: Date
        var count: Int
        var suppressed: Int
        /// The most severe level held back.
        var level: LogLevel
        /// The first message held back, for a summary of a kind without a message id.
        var sample: String?
        /// Whether a timer reports this window when it ends.
        var reportScheduled: Bool
    }

    private let downstream: any LogHandler
    private let interval: TimeInterval
    private let burst: Int
    private let clock: any DaemonClock
    private let windows = Mutex<[Key: Window]>([:])

    /// - Parameter clock: the windows' time, and the timer that reports a window when it ends
    ///   even if nothing else is logged.
    public init(wrapping downstream: any LogHandler, interval: TimeInterval = 10, burst: Int = 200, clock: any DaemonClock) {
        self.downstream = downstream
        self.interval = interval
        self.burst = burst
        self.clock = clock
    }

    static func key(of record: LogRecord) -> Key? {
        guard record.level != .critical, record.level != .debug else { return nil }
        if let id = record.messageID { return .id(id) }
        return .site(file: record.file, line: record.line)
    }

    public func log(_ record: LogRecord) {
        let time = clock.now()
        var scheduleIn: TimeInterval?
        let (summaries, pass): ([LogRecord], Bool) = windows.withLock { windows in
            let summaries = Self.takeEnded(&windows, interval: interval, time: time)
            guard let key = Self.key(of: record) else { return (summaries, true) }
            var window = windows[key] ?? Window(start: time, count: 0, suppressed: 0, level: .debug, sample: nil, reportScheduled: false)
            if time.timeIntervalSince(window.start) >= interval || time < window.start {
                window = Window(start: time, count: 0, suppressed: 0, level: .debug, sample: nil, reportScheduled: false)
            }
            window.count += 1
            let allowed = window.count <= burst
            if !allowed {
                window.suppressed += 1
                window.level = max(window.level, record.level)
                if window.sample == nil { window.sample = record.message }
                if !window.reportScheduled {
                    window.reportScheduled = true
                    scheduleIn = window.start.addingTimeInterval(interval).timeIntervalSince(time)
                }
            }
            windows[key] = window
            return (summaries, allowed)
        }
        for summary in summaries { downstream.log(summary) }
        if pass { downstream.log(record) }
        if let scheduleIn {
            // A little after the end, so that the window has surely ended by then.
            clock.schedule(at: clock.instant() + .seconds(max(0, scheduleIn) + 0.05)) { [weak self] in self?.reportEnded() }
        }
    }

    /// Reports the windows that have ended with something held back.
    func reportEnded() {
        let time = clock.now()
        let summaries = windows.withLock { Self.takeEnded(&$0, interval: interval, time: time) }
        for summary in summaries { downstream.log(summary) }
    }

    /// Reports everything still held back (at shutdown).
    public func flush() {
        let time = clock.now()
        let summaries: [LogRecord] = windows.withLock { windows in
            defer { windows.removeAll() }
            return windows.filter { $0.value.suppressed > 0 }.sorted { $0.value.start < $1.value.start }.map {
                Self.summary(for: $0.key, $0.value, interval: interval, time: time)
            }
        }
        for summary in summaries { downstream.log(summary) }
    }

    private static func takeEnded(_ windows: inout [Key: Window], interval: TimeInterval, time: Date) -> [LogRecord] {
        var summaries: [LogRecord] = []
        for (key, window) in windows where window.suppressed > 0 && time.timeIntervalSince(window.start) >= interval {
            summaries.append(summary(for: key, window, interval: interval, time: time))
            windows[key] = nil
        }
        return summaries
    }

    private static func summary(for key: Key, _ window: Window, interval: TimeInterval, time: Date) -> LogRecord {
        let level = max(window.level, .notice)
        switch key {
        case .id(let id):
            return LogRecord(
                level: level,
                message: "suppressed \(window.suppressed) \"\(id.name)\" messages in the last \(Int(interval))s (rate limit)",
                messageID: .suppressed,
                fields: [(.count, String(window.suppressed)), (.suppressedMessageID, id.rawValue)],
                time: time)
        case .site(let file, let line):
            let sample = window.sample.map { $0.count > 80 ? String($0.prefix(79)) + "…" : $0 } ?? ""
            return LogRecord(
                level: level,
                message: "suppressed \(window.suppressed) messages like \"\(sample)\" (\(file):\(line)) in the last \(Int(interval))s (rate limit)",
                messageID: .suppressedLines,
                fields: [(.count, String(window.suppressed)), (.suppressedCodeFile, file), (.suppressedCodeLine, String(line))],
                time: time)
        }
    }
}
