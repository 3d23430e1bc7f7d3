/// A histogram of request durations with fixed buckets, as Prometheus exposes them (DESIGN §8):
/// a count per bucket, the number of observations and their sum.
///
/// The buckets are upper bounds in seconds, strictly increasing; an observation falls in the
/// first bucket whose bound is at least its value (Prometheus's `le`, "less than or equal"), or
/// in the implicit `+Inf` bucket after the last. Counts are kept per bucket and made cumulative
/// only when rendered (``cumulativeCounts``).
///
/// Pure and small (one integer per bucket): the scheduler keeps one per endpoint and copies it
/// into every status snapshot.
public struct LatencyHistogram: Sendable, Hashable {
    /// The finite upper bounds, in seconds, strictly increasing.
    public let upperBounds: [Double]
    /// Observations per bucket (not cumulative); one more than ``upperBounds``: the last is `+Inf`.
    public private(set) var bucketCounts: [Int]
    /// How many observations there were.
    public private(set) var count = 0
    /// Their sum, in seconds.
    public private(set) var sum = 0.0

    /// From 5 ms to 60 s: Prometheus's default buckets, plus 30 s and 60 s because a verification
    /// request may take up to its `Timeout=` (10 s by default, longer if configured).
    public static let defaultUpperBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// An empty histogram.
    ///
    /// - Parameter upperBounds: finite, strictly increasing bucket bounds in seconds (a broken
    ///   list is a programmer error).
    public init(upperBounds: [Double] = LatencyHistogram.defaultUpperBounds) {
        precondition(upperBounds.allSatisfy(\.isFinite), "histogram bounds must be finite")
        precondition(zip(upperBounds, upperBounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must increase")
        self.upperBounds = upperBounds
        self.bucketCounts = Array(repeating: 0, count: upperBounds.count + 1)
    }

    /// Records one observation of `seconds` (a negative or NaN value counts as 0: a clock that
    /// went backwards must not poison the sum).
    public mutating func record(seconds: Double) {
        let value = seconds.isNaN || seconds < 0 ? 0 : seconds
        let index = upperBounds.firstIndex { value <= $0 } ?? upperBounds.count
        bucketCounts[index] += 1
        count += 1
        sum += value
    }

    /// Records one observation.
    public mutating func record(_ duration: Duration) {
        record(seconds: duration.inSeconds)
    }

    /// Each bucket's upper bound (the last is `+infinity`) with the number of observations at
    /// most that bound: non-decreasing, the last equal to ``count``.
    public var cumulativeCounts: [(upperBound: Double, count: Int)] {
        var running = 0
        return zip(upperBounds + [.infinity], bucketCounts).map { bound, count in
            running += count
            return (bound, running)
        }
    }
}
