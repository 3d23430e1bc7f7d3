/// Time spans as systemd writes them (`500ms`, `30s`, `5min`, `1h 30min`, `3d`), see
/// systemd.time(7).
public enum TimeSpan {
    /// Units in the order systemd lists them, with their length in microseconds.
    static let units: [(names: [String], microseconds: Double)] = [
        (["us", "usec", "µs", "μs"], 1),
        (["ms", "msec"], 1_000),
        (["s", "sec", "second", "seconds"], 1_000_000),
        (["m", "min", "minute", "minutes"], 60_000_000),
        (["h", "hr", "hour", "hours"], 3_600_000_000),
        (["d", "day", "days"], 86_400_000_000),
        (["w", "week", "weeks"], 604_800_000_000),
        (["M", "month", "months"], 2_629_800_000_000),
        (["y", "year", "years"], 31_557_600_000_000),
    ]

    /// The unit names accepted, for error messages.
    public static let acceptedUnitsDescription = "us, ms, s, min, h, d, w, M, y (e.g. 500ms, 30s, 5min, 1h 30min, 3d)"

    /// Parses a span. A number without a unit means seconds. Returns `nil` for anything else,
    /// including negative values.
    public static func parse(_ text: String) -> Duration? {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        var totalMicroseconds = 0.0
        var components = 0
        func skipSpaces() {
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
        }
        skipSpaces()
        while index < scalars.count {
            let numberStart = index
            while index < scalars.count, ("0"..."9").contains(scalars[index]) || scalars[index] == "." { index += 1 }
            guard index > numberStart,
                let number = Double(String(String.UnicodeScalarView(scalars[numberStart..<index]))),
                number.isFinite
            else { return nil }
            skipSpaces()
            let unitStart = index
            while index < scalars.count, scalars[index].properties.isAlphabetic { index += 1 }
            let unit = String(String.UnicodeScalarView(scalars[unitStart..<index]))
            let factor: Double
            if unit.isEmpty {
                factor = 1_000_000
            } else if let match = units.first(where: { $0.names.contains(unit) }) {
                factor = match.microseconds
            } else {
                return nil
            }
            totalMicroseconds += number * factor
            components += 1
            skipSpaces()
        }
        guard components > 0, totalMicroseconds < 1e17 else { return nil }
        return .microseconds(Int64(totalMicroseconds.rounded()))
    }

    /// Formats a span in the same units (`1h 30min`, `500ms`, `90d`, `0`). Days are the largest
    /// unit: months and years have no exact length, and `90d` reads better than `2M 4w 1d 3h`.
    public static func format(_ duration: Duration) -> String {
        var microseconds = duration.totalMicroseconds
        guard microseconds > 0 else { return "0" }
        let parts: [(String, Int64)] = [
            ("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000), ("ms", 1_000), ("us", 1),
        ]
        var words: [String] = []
        for (name, size) in parts where microseconds >= size {
            words.append("\(microseconds / size)\(name)")
            microseconds %= size
        }
        return words.joined(separator: " ")
    }
}

extension Duration {
    /// The duration in whole microseconds, rounded towards zero. Beyond what Int64 holds
    /// (±292,000 years) it saturates instead of trapping: durations from outside, such as a
    /// server's `Retry-After`, can be anything, and formatting one for a log line must not stop
    /// the daemon.
    public var totalMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (total, carry) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        guard !overflow, !carry else { return seconds < 0 ? .min : .max }
        return total
    }

    /// The duration in whole milliseconds, rounded towards zero.
    public var totalMilliseconds: Int64 {
        totalMicroseconds / 1_000
    }

    /// The duration in seconds as a floating-point number.
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
