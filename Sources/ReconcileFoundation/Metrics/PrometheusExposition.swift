/// Renders metric families as Prometheus's text exposition format, version 0.0.4 — what
/// node_exporter's textfile collector reads (DESIGN §8).
///
/// Each family is one group: `# HELP`, `# TYPE`, then its samples, in the order given (callers
/// give a fixed order, so the same numbers always give the same text and an unchanged file need
/// not be rewritten). No time stamps: the textfile collector refuses files that carry them.
///
/// ```
/// # HELP reconciled_orders Orders in the store, by state.
/// # TYPE reconciled_orders gauge
/// reconciled_orders{state="pending"} 12
/// ```
public enum PrometheusExposition {
    /// The format's media type, for reference.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text for `families`, ending with a line feed.
    ///
    /// A metric or label name that the format does not allow, a label named twice, a histogram
    /// sample in a counter (or the reverse), or a histogram label named `le` is a programmer
    /// error.
    public static func render(_ families: [MetricFamily]) -> String {
        var text = ""
        for family in families {
            precondition(isValidMetricName(family.name), "invalid metric name \(family.name)")
            text += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                let names = sample.labels.map(\.name)
                precondition(names.allSatisfy(isValidLabelName), "invalid label name in \(family.name): \(names)")
                precondition(Set(names).count == names.count, "a label named twice in \(family.name): \(names)")
                switch (family.kind, sample.value) {
                case (.counter, .number(let value)), (.gauge, .number(let value)):
                    text += "\(family.name)\(labels(sample.labels)) \(format(value))\n"
                case (.histogram, .histogram(let histogram)):
                    precondition(!names.contains("le"), "a histogram label named le in \(family.name)")
                    for bucket in histogram.cumulativeCounts {
                        let le = MetricFamily.Label("le", format(bucket.upperBound))
                        text += "\(family.name)_bucket\(labels(sample.labels + [le])) \(bucket.count)\n"
                    }
                    text += "\(family.name)_sum\(labels(sample.labels)) \(format(histogram.sum))\n"
                    text += "\(family.name)_count\(labels(sample.labels)) \(histogram.count)\n"
                default:
                    preconditionFailure("a \(family.kind.rawValue) sample of the wrong kind in \(family.name)")
                }
            }
        }
        return text
    }

    // MARK: - Names

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidMetricName(_ name: String) -> Bool {
        isName(name, colons: true)
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Prometheus itself).
    public static func isValidLabelName(_ name: String) -> Bool {
        isName(name, colons: false) && !name.hasPrefix("__")
    }

    private static func isName(_ name: String, colons: Bool) -> Bool {
        // ASCII only: A-Z, a-z, `_`, and `:` in metric names; digits after the first.
        func isLetter(_ byte: UInt8) -> Bool {
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || (colons && byte == 0x3A)
        }
        guard let first = name.utf8.first else { return false }
        return isLetter(first) && name.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) }
    }

    // MARK: - Escaping and numbers

    /// A `# HELP` text: backslash and line feed escaped (`\\`, `\n`).
    public static func escapeHelp(_ text: String) -> String {
        var escaped = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A label value: backslash, double quote and line feed escaped (`\\`, `\"`, `\n`).
    public static func escapeLabelValue(_ text: String) -> String {
        var escaped = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A sample value as the format (Go's `ParseFloat`) reads it: whole numbers without a
    /// fraction, `+Inf`, `-Inf`, `NaN`, otherwise the shortest text that reads back exactly.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    private static func labels(_ labels: [MetricFamily.Label]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.name)=\"\(escapeLabelValue($0.value))\"" }.joined(separator: ",") + "}"
    }
}
