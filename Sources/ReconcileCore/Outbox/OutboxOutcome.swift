import Foundation

/// What a sender found out in one attempt at an outbox action: the requests it sent and its
/// verdict, before ``OutboxResolver`` turns it into a store resolution.
public struct OutboxOutcome: Sendable, Hashable {
    public var records: [AttemptRecord]
    public var verdict: Verdict

    public init(records: [AttemptRecord], verdict: Verdict) {
        self.records = records
        self.verdict = verdict
    }

    public enum Verdict: Sendable, Hashable {
        /// The server did it.
        case done(Reason)
        /// The server had done it already.
        case skipped(Reason)
        /// Try again later.
        case transient(Reason, retryAfter: Duration? = nil)
        /// Our configuration is wrong: not charged, due again at the circuit's probe time.
        case configuration(Reason)
        /// Nothing could be sent (a circuit opened meanwhile): not charged.
        case notSent(Reason)
        /// A person decides.
        case escalate(Reason)
    }
}
