/// What a verifier (or the delivery client) found out in one attempt: the requests it sent and
/// its verdict, before the retry policy turns it into a store resolution.
public struct VerifierOutcome: Sendable, Hashable {
    public var records: [AttemptRecord]
    public var verdict: Verdict

    public init(records: [AttemptRecord], verdict: Verdict) {
        self.records = records
        self.verdict = verdict
    }

    /// The verdict of an attempt.
    public enum Verdict: Sendable, Hashable {
        /// Try again later (after `retryAfter` at least, if the server said).
        case transient(Reason, retryAfter: Duration? = nil)
        /// Apple's 21002: transient up to three answers, then a rejection.
        case malformed
        /// The App Store Server API's 5000000 (an unknown error, not called retryable): transient
        /// up to three answers (counted with 21002s), then the order goes to a person.
        case internalError
        /// Transient up to three answers (counted with 21002s), then rejected with `then`
        /// (Google's "token not found": a fresh purchase may not be visible at once).
        case limitedTransient(Reason, then: Reason)
        case reject(Reason)
        case escalate(Reason)
        /// Our configuration is wrong: the order is not charged and waits for the circuit.
        case configuration(Reason)
        /// Granted (the merchant protocol).
        case granted(Grant, finishedBy: Finisher)
        /// Apple's status 0: match inside the store transaction.
        case match(items: [AppleReceiptItem], environment: String?)
        /// Google Play says the purchase is paid and the order's: claim it inside the store
        /// transaction.
        case playPurchase(PlayMatch)
        /// The delivery endpoint acknowledged the grant.
        case delivered
        /// No request could be sent (an endpoint's circuit opened meanwhile).
        case notSent(Reason)
    }
}

extension VerifierOutcome.Verdict {
    /// The reason a verdict that did not answer the question carries (a wait, a refusal, a
    /// request not sent), for a message; `unexpected_answer` for the others.
    public var failureReason: Reason {
        switch self {
        case .transient(let reason, _), .limitedTransient(let reason, _), .configuration(let reason), .reject(let reason), .escalate(let reason),
            .notSent(let reason):
            reason
        default:
            Reason(.unexpectedAnswer)
        }
    }
}
