import Testing
@testable import ReconcileCore

@Suite("Failure attribution: a failure that follows its order, or the endpoint (issue 23, items 1 and 16)")
struct FailureAttributionTests {
    @Test("an order that fails again after the endpoint answered other orders is to blame; a first failure, or one with no healthy answer between, is the endpoint's")
    func blame() {
        var attribution = FailureAttribution()
        #expect(attribution.failure(order: 1, now: 0) == .endpoint, "nothing known yet")
        #expect(attribution.failure(order: 1, now: 1) == .endpoint, "no healthy answer since its last failure: an outage looks like this")
        attribution.healthy(order: 2, now: 2)
        #expect(attribution.failure(order: 1, now: 3) == .order, "failed at 0, the endpoint answered order 2 at 2")
        #expect(attribution.failure(order: 1, now: 3.5) == .order, "and again: since its first failure")
        #expect(attribution.failure(order: 3, now: 4) == .endpoint, "its first failure")
        #expect(attribution.failure(order: nil, now: 5) == .endpoint)
        // An order that succeeds is forgotten.
        attribution.healthy(order: 1, now: 6)
        #expect(attribution.lastFailure(1) == nil)
        #expect(attribution.failure(order: 1, now: 7) == .endpoint)
        // A healthy answer reported late (older than the last) does not move the time back.
        attribution.healthy(order: nil, now: 5.5)
        #expect(attribution.lastHealthy == 6)
        #expect(attribution.answeredHealthily(within: 60, now: 66))
        #expect(!attribution.answeredHealthily(within: 60, now: 66.5))
        #expect(attribution.lastFailure(1) == 7)
    }

    @Test("the probe is the first order that has not failed here, else the one that failed least recently")
    func probeChoice() {
        var attribution = FailureAttribution()
        _ = attribution.failure(order: 10, now: 5)
        _ = attribution.failure(order: 11, now: 3)
        _ = attribution.failure(order: 12, now: 4)
        #expect(attribution.probeChoice([10, 11, 12, 13, 14]) == 3)
        #expect(attribution.probeChoice([10, 11, 12]) == 1)
        #expect(attribution.probeChoice([]) == nil)
    }

    @Test("memory is bounded: past the capacity the oldest failures are forgotten")
    func bounded() {
        var attribution = FailureAttribution()
        for order in 0..<Int64(FailureAttribution.capacity + 10) { _ = attribution.failure(order: order, now: ContinuousClock.Instant(integerLiteral: Int(order))) }
        #expect(attribution.lastFailure(0) == nil)
        #expect(attribution.lastFailure(Int64(FailureAttribution.capacity + 9)) != nil)
    }
}
