import Foundation

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
