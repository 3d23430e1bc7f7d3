import Testing
@testable import ReconcileCore

@Suite("Token bucket")
struct TokenBucketTests {
    @Test("starts full, refills at the rate, never above the burst")
    func refill() {
        var bucket = TokenBucket(rate: 10, burst: 5, now: 0)
        var taken = 0
        while bucket.take(now: 0) { taken += 1 }
        #expect(taken == 5)
        let next = bucket.nextTokenTime(now: 0)
        #expect(abs(next.secondsFromOrigin - 0.1) < 1e-9)
        let later = bucket.take(now: 0.1)
        #expect(later)
        let available = bucket.available(now: 100)
        #expect(available == 5)
    }

    @Test("over any one-second window, at most rate + burst requests pass")
    func window() {
        var bucket = TokenBucket(rate: 50, burst: 10, now: 0)
        var times: [Double] = []
        var now = 0.0
        while now < 10 {
            while bucket.take(now: ContinuousClock.Instant(floatLiteral: now)) { times.append(now) }
            now += 0.001
        }
        var peak = 0
        for start in times {
            peak = max(peak, times.filter { $0 >= start && $0 < start + 1 }.count)
        }
        #expect(peak <= 60)
        #expect(times.count >= 505 && times.count <= 511)
    }

    @Test("a pause hands out nothing until it ends, then starts from empty")
    func pause() {
        var bucket = TokenBucket(rate: 10, burst: 10, now: 0)
        bucket.pause(until: 5, now: 1)
        let during = bucket.available(now: 4.9)
        let took = bucket.take(now: 4.9)
        let next = bucket.nextTokenTime(now: 2)
        let atEnd = bucket.available(now: 5)
        let after = bucket.available(now: 5.5)
        #expect(during == 0)
        #expect(!took)
        #expect(next >= 5)
        #expect(atEnd == 0)
        #expect(after == 5)
    }

    @Test("a reload ends a pause at once; tokens then accrue from empty, not as a burst")
    func endPause() {
        var bucket = TokenBucket(rate: 10, burst: 10, now: 0)
        bucket.pause(until: 3600, now: 1)
        #expect(bucket.pause(at: 2) == 3600)
        bucket.endPause(now: 2)
        #expect(bucket.pause(at: 2) == nil)
        let atOnce = bucket.available(now: 2)
        let soon = bucket.available(now: 2.5)
        #expect(atOnce == 0)
        #expect(soon == 5)
        // A pause already over when the reload comes: tokens count from its end.
        var over = TokenBucket(rate: 10, burst: 10, now: 0)
        over.pause(until: 5, now: 1)
        #expect(over.pause(at: 6) == nil)
        over.endPause(now: 6)
        let afterOver = over.available(now: 6)
        #expect(afterOver == 10)
    }

    @Test("unlimited takes always")
    func unlimited() {
        var bucket = TokenBucket(rate: nil, burst: 1, now: 0)
        var all = true
        for _ in 0..<10_000 where !bucket.take(now: 0) { all = false }
        #expect(all)
        let next = bucket.nextTokenTime(now: 3)
        #expect(next == 3)
    }
}
