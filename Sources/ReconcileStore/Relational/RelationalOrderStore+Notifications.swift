import Foundation
import ReconcileCore

/// Store notifications (DESIGN §5a): taken in once by `(source, notification_id)` — the unique
/// key decides which node takes one in when two see it at once — matched to the order holding
/// their transaction, applied by ``NotificationRules`` in the same transaction.
extension RelationalOrderStore {
    public func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome] {
        guard !notifications.isEmpty else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            return try notifications.map { notification in
                guard let reference = try transaction.insert(notification, receivedAt: now) else {
                    // Taken in before — perhaps as a push file, which carries no confirmed
                    // purchase: the purchase this one carries is kept now if it was not then.
                    if let purchase = notification.discovered {
                        return .discovered(try transaction.recordDiscovered(purchase, settings: discovery, now: now))
                    }
                    return .duplicate
                }
                let records = try transaction.matchingOrders(notification)
                let outcome = try transaction.apply(notification, reference: reference, to: records, now: now, consumption: consumption)
                // A purchase the phone may never send: kept with the notification that told of it.
                if let purchase = notification.discovered {
                    return .discovered(try transaction.recordDiscovered(purchase, settings: discovery, now: now))
                }
                return .taken(outcome)
            }
        }
    }

    /// How far back a refund recorded unmatched is looked at again for a claim another node took
    /// meanwhile, on a shared store: the two transactions can pass each other (each reads before
    /// the other commits), so a notification taken in while an order claimed its transaction is
    /// caught by this sweep.
    package static var unmatchedRecheckWindow: TimeInterval { 600 }

    public func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome] {
        // Read first: most turns find none, and must not pay for a write transaction.
        let (any, claimed) = try withConnection { connection in
            let transaction = StoreTransaction(connection)
            let claimed = !transaction.isShared ? [] : try connection.fetchAll(
                """
                SELECT DISTINCT coalesce(n.transaction_id, n.original_transaction_id) FROM notifications n
                WHERE n.outcome = 'unmatched' AND n.received_at > \(now.addingTimeInterval(-Self.unmatchedRecheckWindow))
                AND EXISTS (SELECT 1 FROM claims c WHERE c.transaction_id = coalesce(n.transaction_id, n.original_transaction_id))
                LIMIT 100
                """
            ) { $0.string(0) }
            return (try transaction.anyNotificationWaiting(), claimed)
        }
        let swept = claimed.isEmpty
            ? [] : try write { connection in try StoreTransaction(connection).applyUnmatchedNotifications(about: claimed, now: now) }
        guard any else { return swept }
        return try swept + write { connection in
            let transaction = StoreTransaction(connection)
            let waiting = try transaction.notificationsWithOrder(
                """
                SELECT \(raw: NotificationColumns.select), n.order_ref \(raw: NotificationColumns.from)
                WHERE n.outcome = 'waiting' AND o.lease_owner IS NULL ORDER BY n.id LIMIT 100 \(.forUpdateOfSkipLocked("n"))
                """)
            var outcomes: [NotificationRules.Outcome] = []
            for (stored, orderReference) in waiting {
                let records = try transaction.matchingOrders(stored.notification, waitedOn: orderReference)
                outcomes.append(try transaction.apply(stored.notification, reference: stored.reference, to: records, now: now))
            }
            return outcomes
        }
    }

    public func notifications(orderID: String) throws -> [StoredNotification] {
        try withConnection { connection in
            try StoreTransaction(connection).notifications(
                "SELECT \(raw: NotificationColumns.select) \(raw: NotificationColumns.from) WHERE o.order_id = \(orderID) ORDER BY n.id")
        }
    }

    public func notifications(unmatchedOnly: Bool, limit: Int) throws -> [StoredNotification] {
        try withConnection { connection in
            try StoreTransaction(connection).notifications(
                """
                SELECT \(raw: NotificationColumns.select) \(raw: NotificationColumns.from) \(raw: unmatchedOnly ? "WHERE n.outcome = 'unmatched'" : "")
                ORDER BY n.received_at DESC, n.id DESC LIMIT \(limit)
                """)
        }
    }

    public func takenInNotifications(_ ids: [String], source: StoreNotification.Source) throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try withConnection { connection in
            Set(try connection.fetchAll(
                "SELECT notification_id FROM notifications WHERE source = \(source.rawValue) AND notification_id \(in: ids)") { $0.string(0) })
        }
    }
}
