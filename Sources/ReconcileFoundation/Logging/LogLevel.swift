/// Severity of a log event, as syslog and journald number it (`PRIORITY=`).
public enum LogLevel: Int, CaseIterable, Sendable, Hashable, Comparable, CustomStringConvertible {
    case critical = 2
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    /// Lower numbers are more severe; `a < b` means `a` is *less* severe, so that
    /// `level >= minimum` reads as "at least as important as".
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.rawValue > rhs.rawValue
    }

    public var description: String {
        switch self {
        case .critical: "crit"
        case .error: "err"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// Parses the names journalctl's `-p` accepts (`err`, `warning`, `info`, `debug`, …) and their numbers.
    public init?(name: String) {
        switch name.lowercased() {
        case "crit", "critical", "2": self = .critical
        case "err", "error", "3": self = .error
        case "warning", "warn", "4": self = .warning
        case "notice", "5": self = .notice
        case "info", "6": self = .info
        case "debug", "7": self = .debug
        default: return nil
        }
    }
}
