import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation

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

    /// The text on one line that a terminal shows as it is: a line feed becomes ` ⏎ `; other
    /// control characters (CR, ESC, the C1 set), line separators and bidi overrides, which could
    /// rewrite what a terminal shows, are escaped (`\r`, `\x1b`, `\u{202e}`).
    static func singleLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += " ⏎ "
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\x" + hex(scalar.value, digits: 2)
            case _ where needsEscape(scalar):
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static func quoteIfNeeded(_ value: String) -> String {
        let single = singleLine(value)
        guard single.isEmpty || single.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return single }
        return "\"" + single.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
