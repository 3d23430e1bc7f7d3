import Foundation
import ReconcileCore

/// Reading an order's row as an ``OrderRecord`` and writing an ``OrderPlan``: the only two things
/// the store does around the core's rules.
extension SQLiteOrderStore {
    static var recordColumns: String { OrderColumns.record }

    static func record(from row: SQLiteRow) -> OrderRecord {
        OrderColumns.record(from: row)
    }

    /// The order with this id, inside the caller's transaction.
    static func record(orderID: String, connection: SQLiteConnection) throws -> OrderRecord? {
        try connection.queryFirst("SELECT \(recordColumns) FROM orders WHERE order_id = ?", [.text(orderID)], record(from:))
    }

    /// The order with this key, inside the caller's transaction.
    static func record(reference: Int64, connection: SQLiteConnection) throws -> OrderRecord? {
        try connection.queryFirst("SELECT \(recordColumns) FROM orders WHERE id = ?", [.integer(reference)], record(from:))
    }

    /// Writes a plan inside the caller's transaction: the order (inserted when its reference is
    /// 0), the attempt's requests, the history rows and the claims, exactly as planned.
    ///
    /// - Returns: the order's reference.
    @discardableResult
    static func write(_ plan: OrderPlan, connection: SQLiteConnection) throws -> Int64 {
        let record = plan.record
        var reference = record.reference
        if reference == 0 {
            try connection.run(insertSQL, [.text(record.orderID), .text(record.productID), .blob(plan.raw ?? [])] + values(record))
            reference = connection.lastInsertRowID
        } else {
            if plan.changesRecord { try connection.run(updateSQL, values(record) + [.integer(reference)]) }
            if let raw = plan.raw { try connection.run("UPDATE orders SET raw = ? WHERE id = ?", [.blob(raw), .integer(reference)]) }
        }
        var attemptRef: Int64?
        for attempt in plan.attempts {
            let request = attempt.record
            try connection.run(
                """
                INSERT INTO attempts (order_ref, number, kind, started_at, endpoint, environment, http_status, verifier_status,
                    latency_ms, outcome, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(reference), .integer(attempt.number), .text(attempt.kind.recordedKind), .integer(request.startedAt.epochMilliseconds),
                    .text(request.endpoint.rawValue), .text(orNull: request.environment), .integer(orNull: request.httpStatus.map(Int64.init)),
                    .integer(orNull: request.verifierStatus.map(Int64.init)), .integer(request.latency.totalMilliseconds),
                    .text(request.outcome.rawValue), .text(orNull: request.detail),
                ])
            attemptRef = connection.lastInsertRowID
        }
        for claim in plan.claims {
            try connection.run(
                "INSERT OR IGNORE INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES (?, ?, ?, ?)",
                [.text(claim.transactionID), .integer(reference), .integer(claim.at.epochMilliseconds), .text(claim.actor.description)])
        }
        for transition in plan.transitions {
            try recordTransition(
                connection, orderRef: reference, at: transition.at, actor: transition.actor, from: transition.from, to: transition.to,
                reason: transition.reason.code, detail: transition.reason.detail, attemptRef: transition.linksLastAttempt ? attemptRef : nil)
        }
        for action in plan.outbox {
            // The idempotency key is unique: a follow-up recorded once is never recorded again.
            try connection.run(
                outboxInsertSQL, OutboxColumns.insertValues(action, orderReference: reference).map(SQLiteValue.init))
        }
        for action in plan.outboxUpdates { try update(action, connection: connection) }
        return reference
    }

    private static let outboxInsertSQL =
        "INSERT OR IGNORE INTO outbox (\(OutboxColumns.insert.joined(separator: ", "))) VALUES (\(OutboxColumns.insert.map { _ in "?" }.joined(separator: ", ")))"

    private static let outboxUpdateSQL = "UPDATE outbox SET \(OutboxColumns.update.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    /// Writes an outbox action as a rule left it, inside the caller's transaction.
    static func update(_ action: OutboxAction, connection: SQLiteConnection) throws {
        try connection.run(outboxUpdateSQL, OutboxColumns.updateValues(action).map(SQLiteValue.init) + [.integer(action.reference)])
    }

    /// The columns a plan sets, in the order of ``values(_:)``.
    private static var planColumns: [String] { OrderColumns.plan }

    private static let insertSQL =
        "INSERT INTO orders (order_id, product_id, raw, \(planColumns.joined(separator: ", "))) VALUES (?, ?, ?\(String(repeating: ", ?", count: planColumns.count)))"

    private static let updateSQL = "UPDATE orders SET \(planColumns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    private static func values(_ record: OrderRecord) -> [SQLiteValue] {
        OrderColumns.planValues(record).map(SQLiteValue.init)
    }
}

/// The rules' lookups inside an SQLite transaction.
struct SQLiteRuleLookups: RuleLookups {
    let connection: SQLiteConnection

    func claimants(of transactionIDs: [String]) throws -> [String: String] {
        var claims: [String: String] = [:]
        for transactionID in Set(transactionIDs) {
            if let claimant = try connection.queryFirst(
                "SELECT o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = ?", [.text(transactionID)],
                { $0.string(0) })
            {
                claims[transactionID] = claimant
            }
        }
        return claims
    }

    func latestDetail(orderReference: Int64, reason: String) throws -> String? {
        try connection.queryFirst(
            "SELECT detail FROM transitions WHERE order_ref = ? AND reason = ? ORDER BY id DESC LIMIT 1", [.integer(orderReference), .text(reason)]
        ) { $0.optionalString(0) } ?? nil
    }

    func laterStoreEvent(transactionID: String, signedAfter date: Date) throws -> String? {
        try connection.queryFirst(
            "SELECT type FROM notifications INDEXED BY notifications_transaction WHERE \(NotificationColumns.matchKey) = ? AND type IN (\(NotificationColumns.storeEventTypes)) AND signed_at > ? ORDER BY signed_at DESC LIMIT 1",
            [.text(transactionID), .integer(date.epochMilliseconds)], { $0.string(0) })
    }

    func revocationNotices(orderReference: Int64) throws -> [OutboxAction] {
        try connection.query(
            "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.order_ref = ? AND x.kind = ? ORDER BY x.id",
            [.integer(orderReference), .text(OutboxKind.revocationNotice.rawValue)], OutboxColumns.action(from:))
    }

    func deliveryRequested(orderReference: Int64) throws -> Bool {
        try connection.queryFirst(
            "SELECT 1 FROM attempts WHERE order_ref = ? AND kind = 'deliver' LIMIT 1", [.integer(orderReference)], { _ in true }) ?? false
    }

    func escalatedActions(orderReference: Int64) throws -> [OutboxAction] {
        try connection.query(
            "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.order_ref = ? AND x.state = 'escalated' ORDER BY x.id",
            [.integer(orderReference)],
            OutboxColumns.action(from:))
    }
}
