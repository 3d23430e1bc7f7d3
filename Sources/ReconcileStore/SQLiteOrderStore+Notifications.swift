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
                let records = try Self.matchingOrders(notification, connection: connection)
                return .taken(
                    try Self.apply(notification, reference: reference, to: records, now: now, consumption: consumption, connection: connection))
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
                let records = try Self.matchingOrders(stored.notification, waitedOn: orderReference, connection: connection)
                outcomes.append(try Self.apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection))
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
                // Matched again: it may be about other orders too, and one may be in flight.
                let records = try matchingOrders(stored.notification, waitedOn: order, connection: connection)
                outcomes.append(try apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection))
            }
        }
        return outcomes
    }

    /// Inside the caller's transaction: applies the notifications recorded unmatched about any of
    /// `transactionIDs` (orders have just claimed or been granted them: a refund that came before
    /// its order is applied now), in the store's own order of events.
    static func applyUnmatchedNotifications(about transactionIDs: [String], now: Date, connection: SQLiteConnection) throws -> [NotificationRules.Outcome] {
        let keys = Array(Set(transactionIDs))
        guard !keys.isEmpty else { return [] }
        let unmatched = try connection.query(
            """
            SELECT \(NotificationColumns.select) \(NotificationColumns.from)
            WHERE n.id IN (SELECT id FROM notifications INDEXED BY notifications_transaction
                WHERE \(NotificationColumns.matchKey) IN (\(keys.map { _ in "?" }.joined(separator: ", "))))
            AND n.outcome = 'unmatched' AND n.type IN (\(NotificationColumns.storeEventTypes))
            ORDER BY n.signed_at, n.id
            """, keys.map { .text($0) }, NotificationColumns.stored(from:))
        return try unmatched.map { stored in
            let records = try matchingOrders(stored.notification, connection: connection)
            return try apply(stored.notification, reference: stored.reference, to: records, now: now, connection: connection)
        }
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

    /// Runs the rule on the orders it matched and records what became of the notification.
    static func apply(
        _ notification: StoreNotification, reference: Int64, to records: [OrderRecord], now: Date, consumption: ConsumptionPolicy = .off,
        connection: SQLiteConnection
    ) throws -> NotificationRules.Outcome {
        let (plans, outcome, orderReference) = try NotificationRules.apply(
            notification, toEvery: records, now: now, lookups: SQLiteRuleLookups(connection: connection), consumption: consumption)
        for plan in plans { try write(plan, connection: connection) }
        let applied: Int64? = if case .waitsForAttempt = outcome { nil } else { now.epochMilliseconds }
        try connection.run(
            "UPDATE notifications SET order_ref = ?, outcome = ?, applied_at = ? WHERE id = ?",
            [.integer(orNull: orderReference), .text(outcome.code), .integer(orNull: applied), .integer(reference)])
        return outcome
    }

    /// The orders the notification is about: the one holding the claim on its transaction
    /// (`transactionId`, else `originalTransactionId`); without a claim, every order whose proof
    /// names it or its purchase token (none verified yet), oldest first. `waitedOn`: the order a
    /// waiting notification was recorded against (found by a token no longer in hand).
    static func matchingOrders(
        _ notification: StoreNotification, waitedOn: Int64? = nil, connection: SQLiteConnection
    ) throws -> [OrderRecord] {
        var records: [OrderRecord] = []
        func add(_ found: [OrderRecord]) {
            for record in found where !records.contains(where: { $0.reference == record.reference }) { records.append(record) }
        }
        if let transactionID = NotificationMatching.transactionID(of: notification) {
            if let claimant = try connection.queryFirst(
                "SELECT order_ref FROM claims WHERE transaction_id = ?", [.text(transactionID)], { $0.int64(0) })
            {
                return try record(reference: claimant, connection: connection).map { [$0] } ?? []
            }
            add(try connection.query(
                "SELECT \(recordColumns) FROM orders INDEXED BY orders_transaction WHERE transaction_id = ? ORDER BY id",
                [.text(transactionID)], record(from:)))
        }
        if let token = notification.purchaseToken {
            add(try connection.query(
                "SELECT \(recordColumns) FROM orders INDEXED BY orders_purchase_token WHERE purchase_token = ? ORDER BY id",
                [.text(token)], record(from:)))
        }
        if let waitedOn, let record = try record(reference: waitedOn, connection: connection) { add([record]) }
        return records.sorted { $0.reference < $1.reference }
    }
}
