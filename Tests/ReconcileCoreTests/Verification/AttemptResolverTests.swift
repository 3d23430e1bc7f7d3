import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Attempt resolver")
struct AttemptResolverTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let resolver = AttemptResolver(
        policy: RetryPolicy(
            backoff: Backoff(initialDelay: .seconds(30), multiplier: 2, maxDelay: .seconds(3600), jitter: .none),
            maxAttempts: 3, maxAge: .seconds(86_400)),
        deliveryConfigured: false)

    func order(attempt: Int = 1, charged: Bool = true, malformed: Int = 0, age: TimeInterval = 10) -> ClaimedOrder {
        ClaimedOrder(
            reference: 1, orderID: "A1", productID: "p", kind: .verify, proof: OrderProof(receipt: "QUJD"),
            receivedAt: now - age, attempt: attempt, charged: charged, malformedAnswers: malformed)
    }

    func resolve(_ verdict: VerifierOutcome.Verdict, _ order: ClaimedOrder, circuitClosed: Bool = true) -> AttemptCompletion {
        var random = SeededRandomSource(seed: 1)
        return resolver.resolve(VerifierOutcome(records: [], verdict: verdict), for: order, now: now, circuitClosed: circuitClosed, retryAt: now + 5, random: &random)
    }

    @Test("transient: backoff, then MaxAttempts escalates")
    func transient() {
        #expect(resolve(.transient(Reason(.http(503))), order(attempt: 1)).resolution == .retry(at: now + 30, reason: Reason(.http(503))))
        guard case .retry(let at, _, _) = resolve(.transient(Reason(.http(429)), retryAfter: .seconds(600)), order(attempt: 1)).resolution else {
            Issue.record("not a retry")
            return
        }
        #expect(at >= now + 600 && at <= now + 603)
        let escalated = resolve(.transient(Reason(.http(503))), order(attempt: 3)).resolution
        #expect(escalated == .escalate(Reason(.maxAttempts, detail: "3 attempts reached MaxAttempts (last: http_503)"), limits: true))
    }

    @Test("age escalates only with a closed circuit")
    func age() {
        let old = order(attempt: 1, age: 90_000)
        #expect(resolve(.transient(Reason(.timeout)), old).resolution == .escalate(Reason(.maxAge, detail: "older than MaxAge=1d (last: timeout)"), limits: true))
        #expect(resolve(.transient(Reason(.timeout)), old, circuitClosed: false).resolution == .retry(at: now + 30, reason: Reason(.timeout)))
    }

    @Test("21002 is retried twice, then the receipt is rejected as malformed")
    func malformed() {
        #expect(resolve(.malformed, order(malformed: 0)).resolution == .retry(at: now + 30, reason: Reason(.apple(21002)), malformed: true))
        #expect(resolve(.malformed, order(malformed: 1)).resolution == .retry(at: now + 30, reason: Reason(.apple(21002)), malformed: true))
        #expect(resolve(.malformed, order(malformed: 2)).resolution == .reject(Reason(.malformedReceipt, detail: "Apple answered 21002 3 times")))
    }

    @Test("the App Store's 5000000 is retried twice, then the order goes to a person (not rejected: it is Apple's error)")
    func internalError() {
        #expect(resolve(.internalError, order(malformed: 0)).resolution == .retry(at: now + 30, reason: Reason(.appStore(5000000)), malformed: true))
        #expect(resolve(.internalError, order(malformed: 1)).resolution == .retry(at: now + 30, reason: Reason(.appStore(5000000)), malformed: true))
        #expect(resolve(.internalError, order(malformed: 2)).resolution == .escalate(
            Reason(.appleInternalError, detail: "the App Store Server API answered 5000000 3 times")))
    }

    @Test("configuration errors and failed probes charge nothing and wait for the circuit")
    func uncharged() {
        let configuration = resolve(.configuration(Reason(.apple(21004))), order(attempt: 3))
        #expect(configuration.charged == false)
        #expect(configuration.resolution == .retry(at: now + 5, reason: Reason(.apple(21004))))
        let probe = resolve(.transient(Reason(.http(503))), order(attempt: 3, charged: false))
        #expect(probe.charged == false)
        #expect(probe.resolution == .retry(at: now + 5, reason: Reason(.http(503))))
        #expect(resolve(.notSent(Reason(.endpointCircuitOpen(.sandbox))), order()).charged == false)
    }

    @Test("verdicts map to their resolutions; delivery decides whether a match finishes")
    func verdicts() {
        #expect(resolve(.reject(Reason(ReasonCode(rawValue: "x"))), order()).resolution == .reject(Reason(ReasonCode(rawValue: "x"))))
        #expect(resolve(.escalate(Reason(ReasonCode(rawValue: "y"), detail: "z")), order()).resolution == .escalate(Reason(ReasonCode(rawValue: "y"), detail: "z")))
        #expect(resolve(.granted(Grant(transactionID: "1"), finishedBy: .merchant), order()).resolution
            == .verified(Grant(transactionID: "1"), finishes: true, finishedBy: .merchant))
        #expect(resolve(.match(items: [], environment: "Sandbox"), order()).resolution == .match(items: [], environment: "Sandbox", finishes: true))
        var withDelivery = resolver
        withDelivery.deliveryConfigured = true
        var random = SeededRandomSource(seed: 1)
        let completion = withDelivery.resolve(
            VerifierOutcome(records: [], verdict: .match(items: [], environment: nil)), for: order(), now: now, circuitClosed: true, retryAt: now, random: &random)
        #expect(completion.resolution == .match(items: [], environment: nil, finishes: false))
        #expect(resolve(.delivered, order()).resolution == .delivered)
    }
}
