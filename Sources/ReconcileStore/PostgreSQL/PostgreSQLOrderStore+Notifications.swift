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
                let record = try Self.matchingOrder(notification, connection: connection)
                return .taken(
                    try Self.apply(notification, reference: reference, to: record, now: now, consumption: consumption, connection: connection))
            }
        }
    }

    public func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome] {
        let any = try withConnection { connection in
            try connection.queryFirst("SELECT 1 FROM notifications WHERE outcome = 'waiting' LIMIT 1") { _ in true }
        }
        guard any == true else { return [] }
        return try write { connection in
            let waiting = try connection.query(
                """
                SELECT \(NotificationColumns.select), n.order_ref \(NotificationColumns.from)
                WHERE n.outcome = 'waiting' AND o.lease_owner IS NULL ORDER BY n.id LIMIT 100 FOR UPDATE OF n SKIP LOCKED
                """
            ) { (NotificationColumns.stored(from: $0), $0.optionalInt64(17)) }
            var outcomes: [NotificationRules.Outcome] = []
            let records = try Self.records(references: waiting.compactMap(\.1), connection: connection)
            for (stored, orderReference) in waiting {
                let record = orderReference.flatMap { records[$0] }
                guard record?.lease == nil else { continue }
                outcomes.append(try Self.apply(stored.notification, reference: stored.reference, to: record, now: now, connection: connection))
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
            // Read for each: an earlier notification of the same order may have changed it.
            let record = try reference.flatMap { try Self.records(references: [$0], connection: connection)[$0] }
            guard record?.lease == nil else { continue }
            outcomes.append(try apply(stored.notification, reference: stored.reference, to: record, now: now, connection: connection))
        }
        return outcomes
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
        _ notification: StoreNotification, reference: Int64, to record: OrderRecord?, now: Date, consumption: ConsumptionPolicy = .off,
        connection: PostgreSQLConnection
    ) throws -> NotificationRules.Outcome {
        let (plan, outcome) = try NotificationRules.apply(
            notification, to: record, now: now, lookups: PostgreSQLRuleLookups(connection: connection), consumption: consumption)
        if let plan { try write(plan, connection: connection) }
        let applied: Int64? = if case .waitsForAttempt = outcome { nil } else { now.epochMilliseconds }
        _ = try connection.run(
            "UPDATE notifications SET order_ref = $1, outcome = $2, applied_at = $3 WHERE id = $4",
            [.integer(orNull: record?.reference), .text(outcome.code), .integer(orNull: applied), .integer(reference)])
        return outcome
    }

    /// The order the notification is about (see ``NotificationMatching``), locked.
    static func matchingOrder(_ notification: StoreNotification, connection: PostgreSQLConnection) throws -> OrderRecord? {
        guard let transactionID = NotificationMatching.transactionID(of: notification) else { return nil }
        if let claimant = try connection.queryFirst(
            "SELECT order_ref FROM claims WHERE transaction_id = $1", [.text(transactionID)], { $0.int64(0) })
        {
            return try records(references: [claimant], connection: connection)[claimant]
        }
        if let record = try connection.queryFirst(
            "\(selectRecords) WHERE transaction_id = $1 ORDER BY id LIMIT 1 FOR UPDATE", [.text(transactionID)], OrderColumns.record(from:))
        {
            return record
        }
        guard let token = notification.purchaseToken else { return nil }
        return try connection.queryFirst(
            "\(selectRecords) WHERE purchase_token = $1 ORDER BY id LIMIT 1 FOR UPDATE", [.text(token)], OrderColumns.record(from:))
    }
}
