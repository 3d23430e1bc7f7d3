import Foundation

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
