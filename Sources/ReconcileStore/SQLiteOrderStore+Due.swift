import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// The due-order selection: a range scan of the partial index `orders_due`, which holds only
    /// orders waiting for an attempt. Its cost does not grow with the backlog.
    static let dueOrdersSQL = """
        SELECT id FROM orders
        WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?
        ORDER BY next_attempt_at
        LIMIT ?
        """

    /// The earliest next attempt of any order, or `nil` when nothing waits for one: what the
    /// scheduler sleeps until.
    public func nextDueTime() throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                "SELECT next_attempt_at FROM orders WHERE next_attempt_at IS NOT NULL ORDER BY next_attempt_at LIMIT 1"
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    /// The ids of up to `limit` orders due at `now`, earliest first.
    public func dueOrderIDs(at now: Date, limit: Int) throws -> [String] {
        try withConnection { connection in
            try connection.query(
                "SELECT order_id FROM orders WHERE id IN (\(Self.dueOrdersSQL)) ORDER BY next_attempt_at",
                [.integer(now.epochMilliseconds), .integer(limit)]
            ) { $0.string(0) }
        }
    }
}
