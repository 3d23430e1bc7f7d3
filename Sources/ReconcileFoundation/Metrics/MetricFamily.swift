/// One metric as Prometheus's text format groups it: a name, its `# HELP` and `# TYPE` lines,
/// and its samples (one per label set), in the order they are rendered.
///
/// A family may have no samples (a gauge with nothing to report, such as the oldest pending
/// order when none is pending): only its `HELP` and `TYPE` lines are written then.
public struct MetricFamily: Sendable, Hashable {
    /// The metric types this daemon writes.
    public enum Kind: String, Sendable, Hashable {
        /// Only goes up (it restarts from 0 with the daemon); named `…_total`.
        case counter
        /// Goes up and down.
        case gauge
        /// Observations in cumulative buckets, rendered as `…_bucket{le=…}`, `…_sum` and `…_count`.
        case histogram
    }

    /// A label: name and value, in the order rendered.
    public struct Label: Sendable, Hashable {
        public var name: String
        /// Any text; the renderer escapes backslashes, double quotes and line feeds.
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// One series of the family.
    public struct Sample: Sendable, Hashable {
        /// What a sample holds: a number for counters and gauges, a histogram for histograms.
        public enum Value: Sendable, Hashable {
            case number(Double)
            case histogram(LatencyHistogram)
        }

        public var labels: [Label]
        public var value: Value

        public init(_ labels: [Label] = [], _ value: Value) {
            self.labels = labels
            self.value = value
        }

        /// A counter or gauge sample.
        public static func number(_ value: Double, _ labels: [Label] = []) -> Sample {
            Sample(labels, .number(value))
        }

        /// A counter or gauge sample from a count.
        public static func number(_ value: Int, _ labels: [Label] = []) -> Sample {
            Sample(labels, .number(Double(value)))
        }
    }

    /// Matches `[a-zA-Z_:][a-zA-Z0-9_:]*` (checked by the renderer).
    public var name: String
    /// One line, for people; the renderer escapes backslashes and line feeds.
    public var help: String
    public var kind: Kind
    public var samples: [Sample]

    public init(name: String, help: String, kind: Kind, samples: [Sample]) {
        self.name = name
        self.help = help
        self.kind = kind
        self.samples = samples
    }
}
