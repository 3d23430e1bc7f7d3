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

    /// The states ``oldestPendingReceivedAt`` looks at.
    public static let pendingStates: [OrderState] = [.pending, .verifying]

    public init(
        counts: [OrderState: Int], oldestPendingReceivedAt: Date? = nil, nextAttemptAt: Date? = nil, outbox: OutboxSummary = OutboxSummary(),
        unmatchedNotifications: Int = 0
    ) {
        self.counts = counts
        self.oldestPendingReceivedAt = oldestPendingReceivedAt
        self.nextAttemptAt = nextAttemptAt
        self.outbox = outbox
        self.unmatchedNotifications = unmatchedNotifications
    }

    /// Counts the unmatched notifications: a scan of the partial index `notifications_unmatched`.
    static let unmatchedNotificationsSQL = "SELECT count(*) FROM notifications WHERE outcome = 'unmatched'"
}

extension SQLiteOrderStore {
    /// Orders per state: a scan of the covering index `orders_state_received`, never of the table.
    static let countsSQL = "SELECT state, count(*) FROM orders GROUP BY state"

    /// The earliest `received_at` of one state (bound): one step into `orders_state_received`.
    static let oldestReceivedSQL = "SELECT received_at FROM orders WHERE state = ? ORDER BY received_at LIMIT 1"

    /// Counts by state, the oldest pending order and the next due time, in one read snapshot
    /// (`reconcilectl status` and the metrics file).
    public func summary() throws -> StoreSummary {
        try withConnection { connection in
            try connection.readTransaction {
                let pairs = try connection.query(Self.countsSQL) {
                    (OrderState(rawValue: $0.string(0)), $0.int(1))
                }
                var counts: [OrderState: Int] = [:]
                for (state, count) in pairs { if let state { counts[state] = count } }
                let oldest = try StoreSummary.pendingStates.compactMap { state in
                    try connection.queryFirst(Self.oldestReceivedSQL, [.text(state.rawValue)]) { Date(epochMilliseconds: $0.int64(0)) }
                }.min()
                let next = try WorkKind.allCases.compactMap { kind in
                    try connection.queryFirst(
                        """
                        SELECT next_attempt_at FROM orders INDEXED BY \(DueOrders.index(kind))
                        WHERE next_attempt_at IS NOT NULL AND \(DueOrders.condition(kind)) ORDER BY next_attempt_at LIMIT 1
                        """
                    ) { Date(epochMilliseconds: $0.int64(0)) }
                }.min()
                let unmatched = try connection.queryFirst(StoreSummary.unmatchedNotificationsSQL) { $0.int(0) } ?? 0
                return StoreSummary(
                    counts: counts, oldestPendingReceivedAt: oldest, nextAttemptAt: next, outbox: try Self.outboxSummary(connection),
                    unmatchedNotifications: unmatched)
            }
        }
    }
}
