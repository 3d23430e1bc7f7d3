import Foundation
import ReconcileFoundation

/// What happens to an order after a transient failure (DESIGN §6): the next attempt after a
/// backoff, or escalation when `MaxAttempts` is reached or the order is older than `MaxAge`
/// while its endpoint's circuit is closed (an outage never ages orders into escalation).
///
/// Limits are checked after a failed attempt, never before one, so an order that is retried by
/// hand or gets new proof always has at least one more attempt.
public struct RetryPolicy: Sendable, Hashable {
    public var backoff: Backoff
    public var maxAttempts: Int
    public var maxAge: Duration

    public init(backoff: Backoff, maxAttempts: Int, maxAge: Duration) {
        self.backoff = backoff
        self.maxAttempts = maxAttempts
        self.maxAge = maxAge
    }

    public init(_ settings: Configuration.RetrySettings) {
        self.init(backoff: Backoff(settings), maxAttempts: settings.maxAttempts, maxAge: settings.maxAge)
    }

    /// The decision after a transient failure.
    public enum Decision: Sendable, Hashable {
        case retry(at: Date)
        case escalate(reason: ReasonCode)
    }

    /// - Parameters:
    ///   - attempts: attempts charged so far, the failed one included.
    ///   - circuitClosed: whether the order's endpoint is healthy enough for age to count.
    public func afterTransientFailure<R: RandomSource>(
        attempts: Int, receivedAt: Date, now: Date, retryAfter: Duration?, circuitClosed: Bool, random: inout R
    ) -> Decision {
        if attempts >= maxAttempts {
            return .escalate(reason: .maxAttempts)
        }
        if circuitClosed && now.timeIntervalSince(receivedAt) > maxAge.inSeconds {
            return .escalate(reason: .maxAge)
        }
        let delay = backoff.delay(afterAttempt: max(1, attempts), retryAfter: retryAfter, random: &random)
        return .retry(at: now.addingTimeInterval(delay.inSeconds))
    }

    /// Whether an order waiting for usable proof has waited too long.
    public func hasExpired(receivedAt: Date, now: Date) -> Bool {
        now.timeIntervalSince(receivedAt) > maxAge.inSeconds
    }
}
