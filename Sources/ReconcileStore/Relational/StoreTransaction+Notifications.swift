import Foundation
import ReconcileCore

/// Store notifications inside a transaction (DESIGN §5a): matched to the order holding their
/// transaction (locked on a shared store), applied by ``NotificationRules``, and what became of
/// each recorded.
extension StoreTransaction {
    /// Notifications selected by `statement` (which selects ``NotificationColumns/select``).
    package func notifications(_ statement: SQLStatement) throws -> [StoredNotification] {
        try connection.fetchAll(statement, NotificationColumns.stored(from:))
    }

    /// Notifications with the order they were recorded against: `statement` selects
    /// ``NotificationColumns/select`` and `n.order_ref` after it.
    package func notificationsWithOrder(_ statement: SQLStatement) throws -> [(StoredNotification, Int64?)] {
        try connection.fetchAll(statement) { (try NotificationColumns.stored(from: $0), $0.optionalInt64(NotificationColumns.orderReferenceColumn)) }
    }

    /// Takes a notification in once by `(source, notification_id)`; `nil` when it was taken in
    /// before (by this node or another).
    package func insert(_ notification: StoreNotification, receivedAt: Date) throws -> Int64? {
        try connection.fetchOne(
            """
            INSERT INTO notifications (\(raw: NotificationColumns.insert.joined(separator: ", ")))
            VALUES (\(SQLStatement.list(NotificationColumns.insertValues(notification, receivedAt: receivedAt))))
            ON CONFLICT (source, notification_id) DO NOTHING RETURNING id
            """
        ) { $0.int64(0) }
    }

    /// Whether any notification waits: one step into the partial index.
    package func anyNotificationWaiting() throws -> Bool {
        try connection.fetchOne(StoreStatements.anyNotificationWaiting([])) { _ in true } ?? false
    }

    /// Applies the notifications that waited for an attempt on one of `orders` (their attempts
    /// have just ended; their rows are locked already).
    package func applyWaitingNotifications(of orders: [Int64], now: Date) throws -> [NotificationRules.Outcome] {
        guard !orders.isEmpty, try anyNotificationWaiting() else { return [] }
        let waiting = try notificationsWithOrder(
            """
            SELECT \(raw: NotificationColumns.select), n.order_ref \(raw: NotificationColumns.from)
            WHERE n.order_ref \(in: Array(Set(orders)).sorted()) AND n.outcome = 'waiting' ORDER BY n.id \(.forUpdateOf("n"))
            """)
        var outcomes: [NotificationRules.Outcome] = []
        for (stored, reference) in waiting {
            // Matched again for each: an earlier notification may have changed the orders, and it
            // may be about other orders too, one of them in flight.
            let records = try matchingOrders(stored.notification, waitedOn: reference)
            outcomes.append(try apply(stored.notification, reference: stored.reference, to: records, now: now))
        }
        return outcomes
    }

    /// Applies the notifications recorded unmatched about any of `transactionIDs` (orders have
    /// just claimed or been granted them: a refund that came before its order is applied now),
    /// in the store's own order of events. Locked on a shared store: another node's commit that
    /// claims the same transaction waits, then finds them applied.
    package func applyUnmatchedNotifications(about transactionIDs: [String], now: Date) throws -> [NotificationRules.Outcome] {
        let keys = Array(Set(transactionIDs)).sorted()
        guard !keys.isEmpty else { return [] }
        let unmatched = try notifications(
            """
            SELECT \(raw: NotificationColumns.select) \(raw: NotificationColumns.from)
            WHERE n.id IN (SELECT id FROM notifications \(.indexedBy("notifications_transaction"))
                WHERE \(raw: NotificationColumns.matchKey) \(in: keys))
            AND n.outcome = 'unmatched' AND n.type IN (\(raw: NotificationColumns.storeEventTypes))
            ORDER BY n.signed_at, n.id \(.forUpdateOf("n"))
            """)
        return try unmatched.map { stored in
            try apply(stored.notification, reference: stored.reference, to: try matchingOrders(stored.notification), now: now)
        }
    }

    /// Runs the rule on the orders it matched and records what became of the notification.
    package func apply(
        _ notification: StoreNotification, reference: Int64, to records: [OrderRecord], now: Date, consumption: ConsumptionPolicy = .off
    ) throws -> NotificationRules.Outcome {
        let (plans, outcome, orderReference) = try NotificationRules.apply(
            notification, toEvery: records, now: now, lookups: self, consumption: consumption)
        for plan in plans { try write(plan) }
        let applied: Date? = if case .waitsForAttempt = outcome { nil } else { now }
        try connection.performLater(
            "UPDATE notifications SET order_ref = \(orderReference), outcome = \(outcome.code), applied_at = \(applied) WHERE id = \(reference)")
        return outcome
    }

    /// The orders the notification is about (``NotificationMatching``), locked in key order: the
    /// holder of the claim on its transaction; without a claim, every order whose proof names it
    /// or its purchase token, oldest first. `waitedOn`: the order a waiting notification was
    /// recorded against (found by a token no longer in hand).
    package func matchingOrders(_ notification: StoreNotification, waitedOn: Int64? = nil) throws -> [OrderRecord] {
        var references: [Int64] = []
        if let transactionID = NotificationMatching.transactionID(of: notification) {
            if let claimant = try connection.fetchOne("SELECT order_ref FROM claims WHERE transaction_id = \(transactionID)", { $0.int64(0) }) {
                return try records(references: [claimant]).values.map { $0 }
            }
            references += try connection.fetchAll(
                "SELECT id FROM orders \(.indexedBy("orders_transaction")) WHERE transaction_id = \(transactionID)") { $0.int64(0) }
        }
        if let token = notification.purchaseToken {
            references += try connection.fetchAll(
                "SELECT id FROM orders \(.indexedBy("orders_purchase_token")) WHERE purchase_token = \(token)") { $0.int64(0) }
        }
        if let waitedOn { references.append(waitedOn) }
        return try records(references: Array(Set(references))).values.sorted { $0.reference < $1.reference }
    }
}
