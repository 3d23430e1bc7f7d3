import Foundation
import ReconcileCore

/// Store notifications on the shared store (DESIGN §5a, §7): as SQLite does, with the matched
/// order locked for the transaction and the notification's unique key deciding which node takes
/// it in when two see it at once.
extension PostgreSQLOrderStore {
    private static let insertNotificationSQL = """
        INSERT INTO notifications (\(NotificationColumns.insert.joined(separator: ", ")))
        VALUES (\(NotificationColumns.insert.indices.map { "$\($0 + 1)" }.joined(separator: ", ")))
        ON CONFLICT (source, notification_id) DO NOTHING RETURNING id
        """

    public func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, now: Date
    ) throws -> [NotificationIngestOutcome] {
        guard !notifications.isEmpty else { return [] }
        return try write { connection in
            try notifications.map { notification in
                guard let reference = try connection.queryFirst(
                    Self.insertNotificationSQL, NotificationColumns.insertValues(notification, receivedAt: now).map(PostgreSQLValue.init),
                    { $0.int64(0) })
                else { return .duplicate }
                let records = try Self.matchingOrders(notification, connection: connection)
                return .taken(
                    try Self.apply(notification, reference: reference, to: records, now: now, consumption: consumption, connection: connection))
            }
        }
    }

    /// How far back a refund recorded unmatched is looked at again for a claim another node took
    /// meanwhile: the two transactions can pass each other (each reads before the other commits),
    /// so a notification taken in while an order claimed its transaction is caught by this sweep.
    static let unmatchedRecheckWindow: TimeInterval = 600

    /// Transactions of recent unmatched notifications that an order has claimed since.
    static let claimedUnmatchedSQL = """
        SELECT DISTINCT coalesce(n.transaction_id, n.original_transaction_id) FROM notifications n
        WHERE n.outcome = 'unmatched' AND n.received_at > $1
        AND EXISTS (SELECT 1 FROM claims c WHERE c.transaction_id = coalesce(n.transaction_id, n.original_transaction_id))
        LIMIT 100
        """

    public func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome] {
        let since = Int64((now.timeIntervalSince1970 - Self.unmatchedRecheckWindow) * 1000)
        let (any, claimed) = try withConnection { connection in
            (
                try connection.queryFirst("SELECT 1 FROM notifications WHERE outcome = 'waiting' LIMIT 1") { _ in true },
                try connection.query(Self.claimedUnmatchedSQL, [.integer(since)]) { $0.string(0) }
            )
        }
        let swept = claimed.isEmpty
            ? [] : try write { connection in try Self.applyUnmatchedNotifications(about: claimed, now: now, connection: connection) }
        guard any == true else { return swept }
        return try swept + write { connection in
            let waiting = try connection.query(
                """
                SELECT \(NotificationColumns.select), n.order_ref \(NotificationColumns.from)
                WHERE n.outcome = 'waiting' AND o.lease_owner IS NULL ORDER BY n.id LIMIT 100 FOR UPDATE OF n SKIP LOCKED
                """
            ) { (NotificationColumns.stored(from: $0), $0.optionalInt64(17)) }
            var outcomes: [NotificationRules.Outcome] = []
            for (stored, orderReference) in waiting {
                let records = try Self.matchingOrders(stored.notification, waitedOn: orderReference, connection: connection)
                outcomes.append(try Self.apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection))
            }
            return outcomes
        }
    }

    /// Inside the caller's transaction: applies the notifications that waited for an attempt on
    /// one of `orders` (their attempts have just ended; their rows are locked already).
    static func applyWaitingNotifications(of orders: [Int64], now: Date, connection: PostgreSQLConnection) throws -> [NotificationRules.Outcome] {
        guard !orders.isEmpty else { return [] }
        let waiting = try connection.query(
            """
            SELECT \(NotificationColumns.select), n.order_ref \(NotificationColumns.from)
            WHERE n.order_ref = ANY($1::bigint[]) AND n.outcome = 'waiting' ORDER BY n.id FOR UPDATE OF n
            """, [.integerArray(Array(Set(orders)))]
        ) { (NotificationColumns.stored(from: $0), $0.optionalInt64(17)) }
        var outcomes: [NotificationRules.Outcome] = []
        for (stored, reference) in waiting {
            // Matched again for each: an earlier notification may have changed the orders, and it
            // may be about other orders too, one of them in flight.
            let records = try matchingOrders(stored.notification, waitedOn: reference, connection: connection)
            outcomes.append(try apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection))
        }
        return outcomes
    }

    /// Inside the caller's transaction: applies the notifications recorded unmatched about any of
    /// `transactionIDs` (orders have just claimed or been granted them: a refund that came before
    /// its order is applied now), in the store's own order of events. Locked: another node's
    /// commit that claims the same transaction waits, then finds them applied.
    static func applyUnmatchedNotifications(about transactionIDs: [String], now: Date, connection: PostgreSQLConnection) throws -> [NotificationRules.Outcome] {
        let keys = Array(Set(transactionIDs))
        guard !keys.isEmpty else { return [] }
        let unmatched = try connection.query(
            """
            SELECT \(NotificationColumns.select) \(NotificationColumns.from)
            WHERE coalesce(n.transaction_id, n.original_transaction_id) = ANY($1::text[])
            AND n.outcome = 'unmatched' AND n.type IN (\(NotificationColumns.storeEventTypes))
            ORDER BY n.signed_at, n.id FOR UPDATE OF n
            """, [.textArray(keys)], NotificationColumns.stored(from:))
        return try unmatched.map { stored in
            let records = try matchingOrders(stored.notification, connection: connection)
            return try apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection)
        }
    }

    public func notifications(orderID: String) throws -> [StoredNotification] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(NotificationColumns.select) \(NotificationColumns.from) WHERE o.order_id = $1 ORDER BY n.id", [.text(orderID)],
                NotificationColumns.stored(from:))
        }
    }

    public func notifications(unmatchedOnly: Bool, limit: Int) throws -> [StoredNotification] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(NotificationColumns.select) \(NotificationColumns.from) \(unmatchedOnly ? "WHERE n.outcome = 'unmatched'" : "") ORDER BY n.received_at DESC, n.id DESC LIMIT $1",
                [.integer(Int64(limit))], NotificationColumns.stored(from:))
        }
    }

    static func apply(
        _ notification: StoreNotification, reference: Int64, to records: [OrderRecord], now: Date, consumption: ConsumptionPolicy = .off,
        connection: PostgreSQLConnection
    ) throws -> NotificationRules.Outcome {
        let (plans, outcome, orderReference) = try NotificationRules.apply(
            notification, toEvery: records, now: now, lookups: PostgreSQLRuleLookups(connection: connection), consumption: consumption)
        for plan in plans { try write(plan, connection: connection) }
        let applied: Int64? = if case .waitsForAttempt = outcome { nil } else { now.epochMilliseconds }
        _ = try connection.run(
            "UPDATE notifications SET order_ref = $1, outcome = $2, applied_at = $3 WHERE id = $4",
            [.integer(orNull: orderReference), .text(outcome.code), .integer(orNull: applied), .integer(reference)])
        return outcome
    }

    /// The orders the notification is about (see ``NotificationMatching``), locked: the holder of
    /// the claim on its transaction; without a claim, every order whose proof names it or its
    /// purchase token, oldest first. `waitedOn`: the order a waiting notification was recorded
    /// against (found by a token no longer in hand).
    static func matchingOrders(
        _ notification: StoreNotification, waitedOn: Int64? = nil, connection: PostgreSQLConnection
    ) throws -> [OrderRecord] {
        var references: [Int64] = []
        if let transactionID = NotificationMatching.transactionID(of: notification) {
            if let claimant = try connection.queryFirst(
                "SELECT order_ref FROM claims WHERE transaction_id = $1", [.text(transactionID)], { $0.int64(0) })
            {
                return try records(references: [claimant], connection: connection).values.map { $0 }
            }
            references += try connection.query("SELECT id FROM orders WHERE transaction_id = $1", [.text(transactionID)]) { $0.int64(0) }
        }
        if let token = notification.purchaseToken {
            references += try connection.query("SELECT id FROM orders WHERE purchase_token = $1", [.text(token)]) { $0.int64(0) }
        }
        if let waitedOn { references.append(waitedOn) }
        // Locked in key order (``records(references:connection:)``): no deadlock with another node.
        return try records(references: Array(Set(references)), connection: connection).values.sorted { $0.reference < $1.reference }
    }
}
