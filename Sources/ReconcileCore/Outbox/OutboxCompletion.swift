import Foundation

/// The end of one attempt to send an outbox action, as the scheduler hands it to the store: the
/// store applies it under the action's lease (``OutboxRules``).
public struct OutboxCompletion: Sendable, Hashable {
    public var claimed: ClaimedAction
    /// The requests sent (for metrics and the last detail; not stored one by one).
    public var records: [AttemptRecord]
    public var resolution: Resolution
    /// False for a circuit probe, a configuration error and a request never sent.
    public var charged: Bool

    public init(claimed: ClaimedAction, records: [AttemptRecord] = [], resolution: Resolution, charged: Bool) {
        self.claimed = claimed
        self.records = records
        self.resolution = resolution
        self.charged = charged
    }

    /// What the attempt decided.
    public enum Resolution: Sendable, Hashable {
        /// The server did it.
        case done(Reason)
        /// Not needed after all (the server had done it already).
        case skipped(Reason)
        /// Send again at `at`.
        case retry(at: Date, reason: Reason)
        /// A person decides (`MaxAttempts`, or a refusal).
        case escalate(Reason)
    }
}
