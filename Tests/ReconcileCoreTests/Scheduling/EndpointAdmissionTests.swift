import Testing
@testable import ReconcileCore
import TestSupport

@Suite("Endpoint admission (circuits, buckets and pauses, pure)")
struct EndpointAdmissionTests {
    let limits = EndpointAdmission.Limits(
        circuitThreshold: 2, circuitCooldown: 5, circuitMaxCooldown: 60, burst: 3, rates: [.merchant: 1, .sandbox: 0.1])

    @Test("a turn may lease as many orders as slots and tokens allow, at most 256")
    func claims() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        #expect(admission.admit(.merchant, slots: 10, now: 0) == .claim(limit: 3, probe: false))
        #expect(admission.admit(.merchant, slots: 2, now: 0) == .claim(limit: 2, probe: false))
        var unlimited = EndpointAdmission(limits: .init(circuitThreshold: 1, circuitCooldown: 1, circuitMaxCooldown: 1, burst: 1, rates: [:]), endpoints: [], now: 0)
        #expect(unlimited.admit(.merchant, slots: 10_000, now: 0) == .claim(limit: EndpointAdmission.maximumClaim, probe: false))
        // Tokens are taken when orders start: three starts empty the bucket, then it waits a second.
        var starts: [EndpointAdmission.Start] = []
        for _ in 0..<3 { starts.append(admission.start(.merchant, now: 0)) }
        #expect(starts == [.go, .go, .go])
        #expect(admission.start(.merchant, now: 0) == .waitForToken(until: 1))
        #expect(admission.admit(.merchant, slots: 10, now: 0) == .wait(until: 1))
        #expect(admission.admit(.merchant, slots: 10, now: 1) == .claim(limit: 1, probe: false))
    }

    @Test("failures open the circuit: nothing leased until the probe time, then one probe, which takes a token")
    func probe() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        admission.observe(.merchant, .failure(reason: Reason(.http(503))), now: 0)
        #expect(admission.isClosed(.merchant))
        #expect(admission.observe(.merchant, .failure(reason: Reason(.http(503))), now: 0) == .opened(cooldown: 5, reason: "http_503"))
        #expect(admission.admit(.merchant, slots: 10, now: 1) == .wait(until: 5))
        #expect(admission.start(.merchant, now: 1) == .giveBack)
        #expect(admission.retryTime(.merchant, now: 1) == 5)
        #expect(admission.admit(.merchant, slots: 10, now: 5) == .claim(limit: 1, probe: true))
        let probeSent = admission.sendProbe(.merchant, now: 5)
        #expect(probeSent)
        #expect(admission.states(now: 5).first?.circuit == .halfOpen(probeInFlight: true))
        #expect(admission.observe(.merchant, .healthy, now: 6) == .closed)
        #expect(admission.retryTime(.merchant, now: 6) == 11, "closed: the first cool-down")
    }

    @Test("a probe without a token is abandoned, never counted as sent")
    func probeWithoutToken() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.sandbox], now: 0)
        for _ in 0..<3 { #expect(admission.acquire(.sandbox, now: 0) == .granted) }
        admission.observe(.sandbox, .configuration(reason: Reason(.apple(21004))), now: 0)
        #expect(admission.admit(.sandbox, slots: 1, now: 5) == .wait(until: 10), "half-open, but the bucket is empty")
        #expect(admission.states(now: 5).first?.circuit == .halfOpen(probeInFlight: false))
        let sentWithoutToken = admission.sendProbe(.sandbox, now: 6)
        #expect(!sentWithoutToken)
        #expect(admission.states(now: 6).first?.circuit == .halfOpen(probeInFlight: false))
        #expect(admission.acquire(.sandbox, now: 6) == .retry(at: 10))
        #expect(admission.acquire(.sandbox, now: 10) == .granted)
        #expect(admission.acquire(.sandbox, now: 10) == .blocked, "the probe is in flight")
    }

    @Test("a 429 pauses the bucket for Retry-After, at least a second, at most CircuitMaxCooldown; a reload ends pauses and opens circuits")
    func pauses() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        #expect(admission.pause(.merchant, retryAfter: 30, now: 0) == .init(duration: 30, capped: false))
        #expect(admission.admit(.merchant, slots: 10, now: 10) == .wait(until: 30))
        #expect(admission.states(now: 10).first?.pausedUntil == 30)
        #expect(admission.pause(.merchant, retryAfter: 99_999_999_999, now: 10) == .init(duration: 60, capped: true))
        #expect(admission.pause(.merchant, retryAfter: nil, now: 10).duration == 1)
        admission.observe(.merchant, .configuration(reason: Reason(.http(401))), now: 10)
        admission.reload(now: 11)
        #expect(admission.states(now: 11).first?.pausedUntil == nil)
        #expect(admission.states(now: 11).first?.circuit == .halfOpen(probeInFlight: false))
    }

    @Test("new limits keep each circuit's state")
    func reconfigure() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        admission.observe(.merchant, .configuration(reason: Reason(.http(401))), now: 0)
        var changed = limits
        changed.burst = 1
        admission.reconfigure(changed, endpoints: [.merchant, .delivery], now: 1)
        #expect(admission.endpoints == [.merchant, .delivery])
        #expect(admission.states(now: 1).first?.circuit == .open(until: 5))
    }

    @Test("three receipts for another app in a row are a configuration error; a match in between resets the count")
    func bundleMismatches() {
        var streak = BundleMismatchStreak()
        let mismatch = VerifierOutcome.Verdict.escalate(Reason(ReasonCode.bundleMismatch, detail: "the receipt is for x"))
        #expect(streak.check(mismatch).configuration == nil)
        #expect(streak.check(.match(items: [], environment: nil)).configuration == nil)
        #expect(streak.check(mismatch).configuration == nil)
        #expect(streak.check(mismatch).configuration == nil)
        let third = streak.check(mismatch)
        #expect(third.configuration?.description == "bundle_mismatch: 3 receipts in a row are for another app; check BundleID=")
        #expect(third.verdict == .configuration(Reason(.bundleMismatch, detail: "3 receipts in a row are for another app; check BundleID=")))
    }
}

extension EndpointAdmissionTests {
    @Test("a failure that follows its order is charged to it and leaves the circuit alone; one order's configuration answers cannot hold the circuit (issue 23, item 1)")
    func orderFailures() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.googlePlay], now: 0)
        // The order with a proof the server cannot take: a configuration answer opens the circuit
        // (nothing known yet), uncharged.
        #expect(admission.observeAttributed(.googlePlay, .configuration(reason: Reason(.http(404))), order: 7, now: 0) == (.opened(cooldown: 5, reason: "http_404"), .endpoint))
        // The probe goes with another order, which the endpoint answers: closed.
        #expect(admission.admit(.googlePlay, slots: 1, now: 5) == .claim(limit: 1, probe: true))
        #expect(admission.probeChoice(.googlePlay, among: [7, 8]) == 1, "not the order that has just failed")
        _ = admission.sendProbe(.googlePlay, now: 5)
        #expect(admission.observeAttributed(.googlePlay, .healthy, order: 8, now: 6).change == .closed)
        // The order fails again, and again: its failure, the circuit stays closed however often.
        for time in 7...20 {
            let (change, blame) = admission.observeAttributed(.googlePlay, .configuration(reason: Reason(.http(404))), order: 7, now: ContinuousClock.Instant(integerLiteral: time))
            #expect(change == CircuitBreaker.Change.none)
            #expect(blame == .order)
        }
        #expect(admission.isClosed(.googlePlay))
        #expect(admission.isQuiet(.googlePlay))
    }

    @Test("an outage still opens the circuit and re-opens it with the cool-down doubled; every failure is the endpoint's")
    func outage() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        #expect(admission.observeAttributed(.merchant, .failure(reason: Reason(.http(503))), order: 1, now: 0) == (.none, .endpoint))
        #expect(admission.observeAttributed(.merchant, .failure(reason: Reason(.http(503))), order: 2, now: 0) == (.opened(cooldown: 5, reason: "http_503"), .endpoint))
        #expect(admission.admit(.merchant, slots: 1, now: 5) == .claim(limit: 1, probe: true))
        _ = admission.sendProbe(.merchant, now: 5)
        #expect(admission.observeAttributed(.merchant, .failure(reason: Reason(.http(503))), order: 1, now: 5.5) == (.reopened(cooldown: 10, reason: "http_503"), .endpoint))
        #expect(admission.admit(.merchant, slots: 1, now: 10) == .wait(until: 15.5))
    }

    @Test("failures within the cool-down of a healthy answer are the orders'; later ones open the circuit with the probe due at once; a failed probe waits the cool-down (issue 23, item 16)")
    func probeAtOnce() {
        var admission = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        admission.observe(.merchant, .healthy, order: 100, now: 0)
        // Within the cool-down (5 s) of a healthy answer, orders' failures are theirs.
        for order in Int64(1)...20 {
            #expect(admission.observeAttributed(.merchant, .failure(reason: Reason(.http(503))), order: order, now: 1) == (.none, .order))
        }
        #expect(admission.isClosed(.merchant))
        admission.observe(.merchant, .failure(reason: Reason(.http(503))), order: 21, now: 6)
        #expect(admission.observe(.merchant, .failure(reason: Reason(.http(503))), order: 22, now: 6) == .opened(cooldown: 0, reason: "http_503"))
        #expect(admission.admit(.merchant, slots: 1, now: 6) == .claim(limit: 1, probe: true))
        _ = admission.sendProbe(.merchant, now: 6)
        #expect(admission.observe(.merchant, .failure(reason: Reason(.http(503))), order: 23, now: 7) == .reopened(cooldown: 5, reason: "http_503"))
        #expect(admission.admit(.merchant, slots: 1, now: 8) == .wait(until: 12))
        // Long after the last healthy answer (more than CircuitMaxCooldown), the cool-down applies.
        var quiet = EndpointAdmission(limits: limits, endpoints: [.merchant], now: 0)
        quiet.observe(.merchant, .healthy, now: 0)
        quiet.observe(.merchant, .failure(reason: Reason(.http(503))), now: 100)
        #expect(quiet.observe(.merchant, .failure(reason: Reason(.http(503))), now: 100) == .opened(cooldown: 5, reason: "http_503"))
    }
}
