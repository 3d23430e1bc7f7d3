import Foundation
import Synchronization

/// Per-`MESSAGE_ID` rate limiting (DESIGN §8): at most `burst` records of one message id per
/// `interval`; what is held back is counted and reported in one "suppressed N" record when the
/// window has passed.
///
/// Records without a message id and records at `err` or worse are never held back: an
/// operator must see every error, and the journal's own limit still applies.
public final class RateLimitingLogHandler: LogHandler {
    private struct Window {
        var start: Date
        var count: Int
        var suppressed: Int
    }

    private let downstream: any LogHandler
    private let interval: TimeInterval
    private let burst: Int
    private let now: @Sendable () -> Date
    private let windows = Mutex<[MessageID: Window]>([:])

    public init(
        wrapping downstream: any LogHandler, interval: TimeInterval = 10, burst: Int = 200,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.downstream = downstream
        self.interval = interval
        self.burst = burst
        self.now = now
    }

    public func log(_ record: LogRecord) {
        let time = now()
        var summaries: [LogRecord] = []
        let pass: Bool = windows.withLock { windows in
            // Report ids whose window has ended with something held back.
            for (id, window) in windows where window.suppressed > 0 && time.timeIntervalSince(window.start) >= interval {
                summaries.append(Self.summary(for: id, suppressed: window.suppressed, interval: interval, time: time))
                windows[id] = nil
            }
            guard let id = record.messageID, record.level < .error else { return true }
            var window = windows[id] ?? Window(start: time, count: 0, suppressed: 0)
            if time.timeIntervalSince(window.start) >= interval || time < window.start {
                window = Window(start: time, count: 0, suppressed: 0)
            }
            window.count += 1
            let allowed = window.count <= burst
            if !allowed { window.suppressed += 1 }
            windows[id] = window
            return allowed
        }
        for summary in summaries { downstream.log(summary) }
        if pass { downstream.log(record) }
    }

    /// Reports everything still held back (at shutdown).
    public func flush() {
        let time = now()
        let summaries: [LogRecord] = windows.withLock { windows in
            defer { windows.removeAll() }
            return windows.filter { $0.value.suppressed > 0 }.map {
                Self.summary(for: $0.key, suppressed: $0.value.suppressed, interval: interval, time: time)
            }
        }
        for summary in summaries { downstream.log(summary) }
    }

    static func summary(for id: MessageID, suppressed: Int, interval: TimeInterval, time: Date) -> LogRecord {
        LogRecord(
            level: .notice,
            message: "suppressed \(suppressed) \"\(id.name)\" messages in the last \(Int(interval))s (rate limit)",
            messageID: .suppressed,
            fields: [(.count, String(suppressed)), (LogField("SUPPRESSED_MESSAGE_ID"), id.rawValue)],
            time: time)
    }
}
