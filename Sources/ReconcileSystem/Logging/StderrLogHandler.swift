import Foundation
import Glibc
import ReconcileCore

/// Writes one line per log record to standard error.
///
/// Three styles (DESIGN §8): under `JOURNAL_STREAM` a `<N>` priority prefix and no time stamp
/// (journald adds its own); on a terminal a time-stamped, aligned line; otherwise (a file or a
/// pipe) an RFC 3339 time stamp and the level. Fields follow the message as `KEY=value`.
public final class StderrLogHandler: LogHandler {
    /// How lines are shaped.
    public enum Style: Sendable, Hashable {
        /// `<6>message KEY=value`, for journald's stream transport.
        case journalStream
        /// `07:26:06.123 info   message  KEY=value`, for people at a terminal.
        case terminal
        /// `2026-11-30T07:26:06.123Z info message KEY=value`.
        case plain
    }

    public let style: Style
    private let descriptor: Int32
    private let identifier: String

    public init(style: Style, descriptor: Int32 = STDERR_FILENO, identifier: String = "reconciled") {
        self.style = style
        self.descriptor = descriptor
        self.identifier = identifier
    }

    /// The style for this process's stderr: `journalStream` only when `JOURNAL_STREAM` names
    /// the very stream stderr is (a child with redirected stderr inherits the variable).
    public static func detectStyle(environment: [String: String], descriptor: Int32 = STDERR_FILENO) -> Style {
        if let stream = environment["JOURNAL_STREAM"], JournalStream.matches(stream, descriptor: descriptor) {
            return .journalStream
        }
        return isatty(descriptor) == 1 ? .terminal : .plain
    }

    public func log(_ record: LogRecord) {
        var line = format(record)
        line += "\n"
        var bytes = Array(line.utf8)
        // One write per line keeps lines whole when several threads log.
        _ = try? FileSystem.writeAll(descriptor, bytes)
        bytes.removeAll()
    }

    /// The line for a record, without the newline.
    public func format(_ record: LogRecord) -> String {
        let message = Self.singleLine(record.message)
        let fields = record.fields.map { "\($0.0.rawValue)=\(Self.quoteIfNeeded($0.1))" }.joined(separator: " ")
        let tail = fields.isEmpty ? "" : "  " + fields
        switch style {
        case .journalStream:
            return "<\(record.level.rawValue)>\(message)\(tail)"
        case .terminal:
            let time = RFC3339.formatWithMilliseconds(record.time)
            let clock = String(time.dropFirst(11).dropLast())
            let level = record.level.description.padding(toLength: 7, withPad: " ", startingAt: 0)
            return "\(clock) \(level) \(message)\(tail)"
        case .plain:
            return "\(RFC3339.formatWithMilliseconds(record.time)) \(identifier)[\(getpid())] \(record.level): \(message)\(tail)"
        }
    }

    static func singleLine(_ text: String) -> String {
        text.contains("\n") ? text.replacingOccurrences(of: "\n", with: " ⏎ ") : text
    }

    static func quoteIfNeeded(_ value: String) -> String {
        let single = singleLine(value)
        guard single.isEmpty || single.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return single }
        return "\"" + single.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
