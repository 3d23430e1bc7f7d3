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

/// What applying an outbox completion did, for logs, the escalation command and metrics.
public struct OutboxResult: Sendable, Hashable {
    public var orderID: String
    public var kind: OutboxKind
    public var endpoint: VerificationEndpoint
    public var state: OutboxState
    public var reason: Reason
    public var attempts: Int
    public var nextAttemptAt: Date?
    /// False when the lease was gone (nothing was written).
    public var applied: Bool
    /// The action still fails past its deadline: warned now, for the first and only time.
    public var deadlineWarning: Bool
    public var deadline: Date?

    public init(
        orderID: String, kind: OutboxKind, endpoint: VerificationEndpoint, state: OutboxState, reason: Reason, attempts: Int,
        nextAttemptAt: Date? = nil, applied: Bool = true, deadlineWarning: Bool = false, deadline: Date? = nil
    ) {
        self.orderID = orderID
        self.kind = kind
        self.endpoint = endpoint
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.applied = applied
        self.deadlineWarning = deadlineWarning
        self.deadline = deadline
    }
}

/// The outbox as `reconcilectl status` and the metrics show it: the backlog and its oldest action.
public struct OutboxSummary: Sendable, Hashable {
    /// Pending actions (waiting or in flight).
    public var pending: Int
    /// Escalated actions (a person decides).
    public var escalated: Int
    /// When the oldest pending action was created.
    public var oldestPendingCreatedAt: Date?
    /// The earliest next attempt of a pending action.
    public var nextAttemptAt: Date?

    public init(pending: Int = 0, escalated: Int = 0, oldestPendingCreatedAt: Date? = nil, nextAttemptAt: Date? = nil) {
        self.pending = pending
        self.escalated = escalated
        self.oldestPendingCreatedAt = oldestPendingCreatedAt
        self.nextAttemptAt = nextAttemptAt
    }
}
