import Foundation
import ReconcileCore

/// Store notifications in SQLite (DESIGN §5a): taken in once by `(source, notification_id)`,
/// matched to the order holding their transaction, applied by ``NotificationRules`` in the same
/// transaction.
extension SQLiteOrderStore {
    private static let insertNotificationSQL =
        "INSERT OR IGNORE INTO notifications (\(NotificationColumns.insert.joined(separator: ", "))) VALUES (\(NotificationColumns.insert.map { _ in "?" }.joined(separator: ", ")))"

    public func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, now: Date
    ) throws -> [NotificationIngestOutcome] {
        guard !notifications.isEmpty else { return [] }
        return try write { connection in
            try notifications.map { notification in
                try connection.run(
                    Self.insertNotificationSQL, NotificationColumns.insertValues(notification, receivedAt: now).map(SQLiteValue.init))
                guard connection.changes == 1 else { return .duplicate }
                let reference = connection.lastInsertRowID
                let record = try Self.matchingOrder(notification, connection: connection)
                return .taken(
                    try Self.apply(notification, reference: reference, to: record, now: now, consumption: consumption, connection: connection))
            }
        }
    }

    /// Whether any notification waits: one step into the partial index.
    static let anyWaitingSQL = "SELECT 1 FROM notifications INDEXED BY notifications_waiting WHERE outcome = 'waiting' LIMIT 1"

    public func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome] {
        // Read first: most turns find none, and must not pay for a write transaction.
        let any = try withConnection { connection in try connection.queryFirst(Self.anyWaitingSQL) { _ in true } }
        guard any == true else { return [] }
        return try write { connection in
            let waiting = try connection.query(
                "SELECT \(NotificationColumns.select), n.order_ref \(NotificationColumns.from) WHERE n.outcome = 'waiting' AND o.lease_owner IS NULL ORDER BY n.id LIMIT 100"
            ) { (NotificationColumns.stored(from: $0), $0.optionalInt64(17)) }
            var outcomes: [NotificationRules.Outcome] = []
            for (stored, orderReference) in waiting {
                let record = try orderReference.flatMap { try Self.record(reference: $0, connection: connection) }
                guard record?.lease == nil else { continue }
                outcomes.append(try Self.apply(stored.notification, reference: stored.reference, to: record, now: now, connection: connection))
            }
            return outcomes
        }
    }

    /// Inside the caller's transaction: applies the notifications that waited for an attempt on
    /// one of `orders` (their attempts have just ended).
    static func applyWaitingNotifications(of orders: [Int64], now: Date, connection: SQLiteConnection) throws -> [NotificationRules.Outcome] {
        guard !orders.isEmpty,
            try connection.queryFirst(anyWaitingSQL, [], { _ in true }) == true
        else { return [] }
        var outcomes: [NotificationRules.Outcome] = []
        for order in Set(orders).sorted() {
            let waiting = try connection.query(
                "SELECT \(NotificationColumns.select) \(NotificationColumns.from) WHERE n.order_ref = ? AND n.outcome = 'waiting' ORDER BY n.id",
                [.integer(order)], NotificationColumns.stored(from:))
            for stored in waiting {
                let record = try record(reference: order, connection: connection)
                guard record?.lease == nil else { break }
                outcomes.append(try apply(stored.notification, reference: stored.reference, to: record, now: now, connection: connection))
            }
        }
        return outcomes
    }

    public func notifications(orderID: String) throws -> [StoredNotification] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(NotificationColumns.select) \(NotificationColumns.from) WHERE o.order_id = ? ORDER BY n.id", [.text(orderID)],
                NotificationColumns.stored(from:))
        }
    }

    public func notifications(unmatchedOnly: Bool, limit: Int) throws -> [StoredNotification] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(NotificationColumns.select) \(NotificationColumns.from) \(unmatchedOnly ? "WHERE n.outcome = 'unmatched'" : "") ORDER BY n.received_at DESC, n.id DESC LIMIT ?",
                [.integer(Int64(limit))], NotificationColumns.stored(from:))
        }
    }

    /// Runs the rule on the order and records what became of the notification.
    static func apply(
        _ notification: StoreNotification, reference: Int64, to record: OrderRecord?, now: Date, consumption: ConsumptionPolicy = .off,
        connection: SQLiteConnection
    ) throws -> NotificationRules.Outcome {
        let (plan, outcome) = try NotificationRules.apply(
            notification, to: record, now: now, lookups: SQLiteRuleLookups(connection: connection), consumption: consumption)
        if let plan { try write(plan, connection: connection) }
        let applied: Int64? = if case .waitsForAttempt = outcome { nil } else { now.epochMilliseconds }
        try connection.run(
            "UPDATE notifications SET order_ref = ?, outcome = ?, applied_at = ? WHERE id = ?",
            [.integer(orNull: record?.reference), .text(outcome.code), .integer(orNull: applied), .integer(reference)])
        return outcome
    }

    /// The order the notification is about: the one holding the claim on its transaction
    /// (`transactionId`, else `originalTransactionId`), else one whose proof names it (not yet
    /// verified).
    static func matchingOrder(_ notification: StoreNotification, connection: SQLiteConnection) throws -> OrderRecord? {
        guard let transactionID = NotificationMatching.transactionID(of: notification) else { return nil }
        if let claimant = try connection.queryFirst(
            "SELECT order_ref FROM claims WHERE transaction_id = ?", [.text(transactionID)], { $0.int64(0) })
        {
            return try record(reference: claimant, connection: connection)
        }
        if let record = try connection.queryFirst(
            "SELECT \(recordColumns) FROM orders INDEXED BY orders_transaction WHERE transaction_id = ? ORDER BY id LIMIT 1",
            [.text(transactionID)], record(from:))
        {
            return record
        }
        guard let token = notification.purchaseToken else { return nil }
        return try connection.queryFirst(
            "SELECT \(recordColumns) FROM orders INDEXED BY orders_purchase_token WHERE purchase_token = ? ORDER BY id LIMIT 1",
            [.text(token)], record(from:))
    }
}
