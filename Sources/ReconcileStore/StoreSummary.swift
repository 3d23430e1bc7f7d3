import Foundation
import ReconcileCore

/// What `reconcilectl status` and the metrics file show of the store.
public struct StoreSummary: Sendable, Hashable {
    public var counts: [OrderState: Int]
    /// When the oldest order still waiting for verification (pending or verifying) was taken in.
    public var oldestPendingReceivedAt: Date?
    /// The earliest next attempt of any order.
    public var nextAttemptAt: Date?
    /// The outbox's backlog (DESIGN §5a).
    public var outbox: OutboxSummary
    /// Store notifications no order holds the transaction of (DESIGN §5a).
    public var unmatchedNotifications: Int
    /// Discovered purchases waiting, and left for a person (DESIGN §5b).
    public var discovered: DiscoverySummary

    /// The states ``oldestPendingReceivedAt`` looks at.
    public static let pendingStates: [OrderState] = [.pending, .verifying]

    public init(
        counts: [OrderState: Int], oldestPendingReceivedAt: Date? = nil, nextAttemptAt: Date? = nil, outbox: OutboxSummary = OutboxSummary(),
        unmatchedNotifications: Int = 0, discovered: DiscoverySummary = DiscoverySummary()
    ) {
        self.discovered = discovered
        self.counts = counts
        self.oldestPendingReceivedAt = oldestPendingReceivedAt
        self.nextAttemptAt = nextAttemptAt
        self.outbox = outbox
        self.unmatchedNotifications = unmatchedNotifications
    }
}
