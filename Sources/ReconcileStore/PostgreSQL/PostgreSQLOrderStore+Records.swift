import Foundation
import ReconcileCore

/// Reading orders' rows as ``OrderRecord``s (locked for the transaction) and writing
/// ``OrderPlan``s: the only things the store does around the core's rules.
extension PostgreSQLOrderStore {
    static let selectRecords = "SELECT \(OrderColumns.record) FROM orders"

    /// The order with this id, locked until the transaction ends.
    static func record(orderID: String, connection: PostgreSQLConnection) throws -> OrderRecord? {
        try connection.queryFirst("\(selectRecords) WHERE order_id = $1 FOR UPDATE", [.text(orderID)], OrderColumns.record(from:))
    }

    /// The orders with these ids, locked until the transaction ends. Rows are locked in key order
    /// whatever the order of `orderIDs`, so that two transactions locking overlapping sets wait
    /// for each other instead of deadlocking.
    static func records(orderIDs: [String], connection: PostgreSQLConnection) throws -> [String: OrderRecord] {
        guard !orderIDs.isEmpty else { return [:] }
        let records = try connection.query(
            "\(selectRecords) WHERE order_id = ANY($1::text[]) ORDER BY id FOR UPDATE", [.textArray(orderIDs)], OrderColumns.record(from:))
        return Dictionary(records.map { ($0.orderID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The orders with these keys, locked (in key order) until the transaction ends.
    static func records(references: [Int64], connection: PostgreSQLConnection) throws -> [Int64: OrderRecord] {
        guard !references.isEmpty else { return [:] }
        let records = try connection.query(
            "\(selectRecords) WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE", [.integerArray(references)], OrderColumns.record(from:))
        return Dictionary(records.map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Asks a rule for a plan and writes it; when the write lost a race for a unique key (another
    /// node inserted the order, or claimed the transaction, since the rule looked), asks the rule
    /// again: it now sees the winner.
    ///
    /// - Returns: the rule's outcome, and the plan as written (`nil` when the rule wrote nothing).
    static func planAndWrite<Outcome>(
        _ what: @autoclosure () -> String, connection: PostgreSQLConnection, _ rule: () throws -> (OrderPlan?, Outcome)
    ) throws -> (outcome: Outcome, written: OrderPlan?) {
        for _ in 0..<8 {
            let (plan, outcome) = try rule()
            guard let plan else { return (outcome, nil) }
            do {
                let reference = try write(plan, connection: connection)
                var written = plan
                written.record.reference = reference
                return (outcome, written)
            } catch is PostgreSQLPlanConflict {
                continue
            }
        }
        throw PostgreSQLStoreError.persistentConflict(what())
    }

    /// Writes a plan inside the caller's transaction: the order (inserted when its reference is
    /// 0), the attempt's requests, the claims and the history rows, exactly as planned. A plan
    /// that takes claims is written under a savepoint, so that losing one leaves nothing of it.
    ///
    /// - Returns: the order's reference.
    /// - Throws: ``PostgreSQLPlanConflict`` (nothing written) when another transaction holds the
    ///   order id or one of the claims.
    @discardableResult
    static func write(_ plan: OrderPlan, connection: PostgreSQLConnection) throws -> Int64 {
        guard !plan.claims.isEmpty else { return try writeUnguarded(plan, connection: connection) }
        return try connection.savepoint { try writeUnguarded(plan, connection: connection) }
    }

    private static func writeUnguarded(_ plan: OrderPlan, connection: PostgreSQLConnection) throws -> Int64 {
        let record = plan.record
        let values = OrderColumns.planValues(record).map(PostgreSQLValue.init)
        var reference = record.reference
        if reference == 0 {
            // Waits for a node inserting the same order id to commit or roll back; then inserts
            // nothing if it committed.
            guard
                let inserted = try connection.queryFirst(
                    insertSQL, [.text(record.orderID), .text(record.productID), .bytes(plan.raw ?? [])] + values, { $0.int64(0) })
            else { throw PostgreSQLPlanConflict.orderExists(record.orderID) }
            reference = inserted
        } else {
            if plan.changesRecord { try connection.run(updateSQL, values + [.integer(reference)]) }
            if let raw = plan.raw { try connection.run("UPDATE orders SET raw = $1 WHERE id = $2", [.bytes(raw), .integer(reference)]) }
        }
        var attemptRef: Int64?
        for attempt in plan.attempts {
            let request = attempt.record
            attemptRef = try connection.queryFirst(
                """
                INSERT INTO attempts (order_ref, number, kind, started_at, endpoint, environment, http_status, verifier_status,
                    latency_ms, outcome, detail)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                RETURNING id
                """,
                [
                    .integer(reference), .integer(attempt.number), .text(attempt.kind.recordedKind), .integer(request.startedAt.epochMilliseconds),
                    .text(request.endpoint.rawValue), .text(orNull: request.environment), .integer(orNull: request.httpStatus.map(Int64.init)),
                    .integer(orNull: request.verifierStatus.map(Int64.init)), .integer(request.latency.totalMilliseconds),
                    .text(request.outcome.rawValue), .text(orNull: request.detail),
                ]
            ) { $0.int64(0) }
        }
        for claim in plan.claims {
            // The unique key decides between two nodes claiming one transaction: the second waits
            // for the first to commit, then inserts nothing.
            let inserted = try connection.queryFirst(
                """
                INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES ($1, $2, $3, $4)
                ON CONFLICT (transaction_id) DO NOTHING
                RETURNING order_ref
                """,
                [.text(claim.transactionID), .integer(reference), .integer(claim.at.epochMilliseconds), .text(claim.actor.description)]
            ) { $0.int64(0) }
            if inserted == nil {
                let holder = try connection.queryFirst("SELECT order_ref FROM claims WHERE transaction_id = $1", [.text(claim.transactionID)]) {
                    $0.int64(0)
                }
                // A claim the order already holds is kept.
                if holder != reference { throw PostgreSQLPlanConflict.transactionClaimed(claim.transactionID) }
            }
        }
        for transition in plan.transitions {
            try connection.run(
                """
                INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail, attempt_ref)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """,
                [
                    .integer(reference), .integer(transition.at.epochMilliseconds), .text(transition.actor.description),
                    .text(orNull: transition.from?.rawValue), .text(transition.to.rawValue), .text(transition.reason.code),
                    .text(orNull: transition.reason.detail), .integer(orNull: transition.linksLastAttempt ? attemptRef : nil),
                ])
        }
        for action in plan.outbox {
            // The idempotency key is unique: a follow-up recorded once is never recorded again.
            try connection.run(outboxInsertSQL, OutboxColumns.insertValues(action, orderReference: reference).map(PostgreSQLValue.init))
        }
        for action in plan.outboxUpdates { try update(action, connection: connection) }
        return reference
    }

    private static let outboxInsertSQL = """
        INSERT INTO outbox (\(OutboxColumns.insert.joined(separator: ", ")))
        VALUES (\((1...OutboxColumns.insert.count).map { "$\($0)" }.joined(separator: ", ")))
        ON CONFLICT (idempotency_key) DO NOTHING
        """

    private static let outboxUpdateSQL = """
        UPDATE outbox SET \(OutboxColumns.update.enumerated().map { "\($0.element) = $\($0.offset + 1)" }.joined(separator: ", "))
        WHERE id = $\(OutboxColumns.update.count + 1)
        """

    /// Writes an outbox action as a rule left it, inside the caller's transaction.
    static func update(_ action: OutboxAction, connection: PostgreSQLConnection) throws {
        try connection.run(outboxUpdateSQL, OutboxColumns.updateValues(action).map(PostgreSQLValue.init) + [.integer(action.reference)])
    }

    private static let insertSQL = """
        INSERT INTO orders (order_id, product_id, raw, \(OrderColumns.plan.joined(separator: ", ")))
        VALUES (\((1...(OrderColumns.plan.count + 3)).map { "$\($0)" }.joined(separator: ", ")))
        ON CONFLICT (order_id) DO NOTHING
        RETURNING id
        """

    private static let updateSQL = """
        UPDATE orders SET \(OrderColumns.plan.enumerated().map { "\($0.element) = $\($0.offset + 1)" }.joined(separator: ", "))
        WHERE id = $\(OrderColumns.plan.count + 1)
        """

    /// The database server's clock, for what the shared store times by it (leases).
    static func databaseClock(_ connection: PostgreSQLConnection) throws -> Date {
        Date(epochMilliseconds: try connection.scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint") ?? 0)
    }
}
