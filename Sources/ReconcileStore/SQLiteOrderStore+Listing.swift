import Foundation
import ReconcileCore

/// Which orders `reconcilectl list` shows.
public struct OrderFilter: Sendable, Hashable {
    /// Any of these states (all states when empty).
    public var states: [OrderState]
    public var productID: String?
    /// Taken in before this time (`--older-than`).
    public var receivedBefore: Date?
    /// Only orders of this store (`--store`).
    public var store: PurchaseStore?
    public var limit: Int

    public init(states: [OrderState] = [], productID: String? = nil, receivedBefore: Date? = nil, store: PurchaseStore? = nil, limit: Int = 100) {
        self.states = states
        self.productID = productID
        self.receivedBefore = receivedBefore
        self.store = store
        self.limit = limit
    }
}

extension SQLiteOrderStore {
    /// Orders matching `filter`, soonest next attempt first (orders without one last, oldest
    /// first), and how many match in all.
    public func list(_ filter: OrderFilter) throws -> (orders: [StoredOrder], total: Int) {
        var conditions: [String] = []
        var parameters: [SQLiteValue] = []
        if !filter.states.isEmpty {
            conditions.append("state IN (\(filter.states.map { _ in "?" }.joined(separator: ", ")))")
            parameters += filter.states.map { .text($0.rawValue) }
        }
        if let product = filter.productID {
            conditions.append("product_id = ?")
            parameters.append(.text(product))
        }
        if let before = filter.receivedBefore {
            conditions.append("received_at < ?")
            parameters.append(.integer(before.epochMilliseconds))
        }
        switch filter.store {
        case .googlePlay?: conditions.append("purchase_token IS NOT NULL")
        case .appStore?: conditions.append("purchase_token IS NULL")
        case nil: break
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try withConnection { connection in
            try connection.readTransaction {
                let orders = try connection.query(
                    """
                    SELECT \(Self.orderColumns) FROM orders \(whereClause)
                    ORDER BY next_attempt_at IS NULL, next_attempt_at, received_at, id
                    LIMIT ?
                    """, parameters + [.integer(filter.limit)]
                ) { Self.order(from: $0) }
                let total = Int(try connection.scalar("SELECT count(*) FROM orders \(whereClause)", parameters) ?? 0)
                return (orders, total)
            }
        }
    }

    /// A consistent copy of the store at `path` (`VACUUM INTO`), safe while the daemon writes.
    /// The copy gives freed pages back (`auto_vacuum=INCREMENTAL`), whatever the store does.
    public func backup(to path: String) throws {
        try withConnection { connection in
            // Setting it on a store that has it already would write (and `reconcilectl backup`
            // reads through a read-only connection).
            if try connection.scalar("PRAGMA auto_vacuum") == 0 { try connection.execute("PRAGMA auto_vacuum = INCREMENTAL") }
            try connection.run("VACUUM INTO ?", [.text(path)])
        }
    }
}
