import Testing
@testable import ReconcileFoundation

@Suite("Metrics: latency histogram")
struct LatencyHistogramTests {
    @Test("an observation falls in the first bucket whose bound is at least its value; above the last, in +Inf")
    func buckets() {
        var histogram = LatencyHistogram(upperBounds: [0.1, 1, 10])
        for seconds in [0.05, 0.1, 0.1000001, 1, 9.99, 10, 10.5, 3600] { histogram.record(seconds: seconds) }
        #expect(histogram.bucketCounts == [2, 2, 2, 2])
        #expect(histogram.count == 8)
        #expect(abs(histogram.sum - (0.05 + 0.1 + 0.1000001 + 1 + 9.99 + 10 + 10.5 + 3600)) < 1e-9)
    }

    @Test("cumulative counts never decrease and end at the count, with +Inf last")
    func cumulative() {
        var histogram = LatencyHistogram(upperBounds: [0.1, 1, 10])
        histogram.record(.milliseconds(30))
        histogram.record(.milliseconds(300))
        histogram.record(.milliseconds(700))
        histogram.record(.seconds(30))
        let cumulative = histogram.cumulativeCounts
        #expect(cumulative.map(\.upperBound) == [0.1, 1, 10, .infinity])
        #expect(cumulative.map(\.count) == [1, 3, 3, 4])
        #expect(cumulative.last?.count == histogram.count)
    }

    @Test("an empty histogram has every bucket at zero; a negative or NaN value counts as 0")
    func edges() {
        var histogram = LatencyHistogram()
        #expect(histogram.bucketCounts == Array(repeating: 0, count: LatencyHistogram.defaultUpperBounds.count + 1))
        #expect(histogram.count == 0 && histogram.sum == 0)
        histogram.record(seconds: -1)
        histogram.record(seconds: .nan)
        #expect(histogram.bucketCounts.first == 2)
        #expect(histogram.sum == 0)
    }

    @Test("the default buckets increase from 5 ms to 60 s")
    func defaults() {
        let bounds = LatencyHistogram.defaultUpperBounds
        #expect(bounds.first == 0.005 && bounds.last == 60)
        #expect(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 })
    }
}
