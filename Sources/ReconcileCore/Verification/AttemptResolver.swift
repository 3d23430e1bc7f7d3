import Foundation
import ReconcileFoundation

/// Turns a verifier's verdict into what the store applies (DESIGN §5–6): transient answers get
/// a backoff or escalate on the limits, 21002 is capped at three answers, configuration errors
/// and circuit probes charge no attempt.
public struct AttemptResolver: Sendable, Hashable {
    public var policy: RetryPolicy
    /// Whether a delivery step follows verification (`[Delivery] URL=` with `Kind=apple`).
    public var deliveryConfigured: Bool
    /// `21002` answers before `malformed_receipt`.
    public var malformedLimit = 3
    /// What a Google Play order that finishes owes Google (`[GooglePlay] Acknowledge=`, `Consume=`).
    public var playFollowUp: PlayFollowUp

    public init(policy: RetryPolicy, deliveryConfigured: Bool, playFollowUp: PlayFollowUp = PlayFollowUp()) {
        self.policy = policy
        self.deliveryConfigured = deliveryConfigured
        self.playFollowUp = playFollowUp
    }

    /// - Parameters:
    ///   - circuitClosed: whether the order's endpoint is healthy (age counts only then).
    ///   - retryAt: when an uncharged order is due again (the circuit's probe time).
    public func resolve<R: RandomSource>(
        _ outcome: VerifierOutcome, for order: ClaimedOrder, now: Date, circuitClosed: Bool, retryAt: Date, random: inout R
    ) -> AttemptCompletion {
        func completion(_ resolution: AttemptCompletion.Resolution, charged: Bool = order.charged) -> AttemptCompletion {
            AttemptCompletion(order: order, records: outcome.records, resolution: resolution, charged: charged, playFollowUp: playFollowUp)
        }
        func afterFailure(_ reason: Reason, retryAfter: Duration?, malformed: Bool = false) -> AttemptCompletion {
            guard order.charged else {
                // A probe that failed: not charged, due again at the next probe.
                return completion(.retry(at: max(retryAt, now), reason: reason, malformed: malformed))
            }
            switch policy.afterTransientFailure(
                attempts: order.attempt, receivedAt: order.receivedAt, now: now, retryAfter: retryAfter,
                circuitClosed: circuitClosed, random: &random)
            {
            case .retry(let at):
                return completion(.retry(at: at, reason: reason, malformed: malformed))
            case .escalate(let limit):
                let detail = limit == .maxAttempts
                    ? "\(order.attempt) attempts reached MaxAttempts (last: \(reason))"
                    : "older than MaxAge=\(TimeSpan.format(policy.maxAge)) (last: \(reason))"
                return completion(.escalate(Reason(limit, detail: detail), limits: true))
            }
        }

        switch outcome.verdict {
        case .transient(let reason, let retryAfter):
            return afterFailure(reason, retryAfter: retryAfter)
        case .notSent(let reason):
            return completion(.retry(at: max(retryAt, now), reason: reason), charged: false)
        case .malformed:
            if order.malformedAnswers + 1 >= malformedLimit {
                return completion(.reject(Reason(.malformedReceipt, detail: "Apple answered 21002 \(malformedLimit) times")))
            }
            return afterFailure(Reason(.apple(21002)), retryAfter: nil, malformed: true)
        case .internalError:
            if order.malformedAnswers + 1 >= malformedLimit {
                return completion(.escalate(Reason(
                    .appleInternalError, detail: "the App Store Server API answered 5000000 \(malformedLimit) times")))
            }
            return afterFailure(Reason(.appStore(5000000)), retryAfter: nil, malformed: true)
        case .limitedTransient(let reason, let final):
            if order.malformedAnswers + 1 >= malformedLimit {
                return completion(.reject(final.adding("after \(malformedLimit) such answers")))
            }
            return afterFailure(reason, retryAfter: nil, malformed: true)
        case .configuration(let reason):
            return completion(.retry(at: max(retryAt, now), reason: reason), charged: false)
        case .reject(let reason):
            return completion(.reject(reason))
        case .escalate(let reason):
            return completion(.escalate(reason))
        case .granted(let grant, let finishedBy):
            return completion(.verified(grant, finishes: true, finishedBy: finishedBy))
        case .match(let items, let environment):
            return completion(.match(items: items, environment: environment, finishes: !deliveryConfigured))
        case .playPurchase(let match):
            return completion(.playMatch(match, finishes: !deliveryConfigured))
        case .delivered:
            return completion(.delivered)
        }
    }
}
