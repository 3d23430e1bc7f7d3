import Foundation
import ReconcileCore

/// Reading an order's row as an ``OrderRecord`` and writing an ``OrderPlan``: the only two things
/// the store does around the core's rules.
extension SQLiteOrderStore {
    static let recordColumns = """
        id, order_id, product_id, state, resume_state, held_resume_state, held_reason, reason, receipt, transaction_id,
        signed_transaction, proof_revision, application_username, user_id, amount, currency, created_at, content_hash,
        received_at, updated_at, next_attempt_at, attempts, delivery_attempts, malformed_answers, lease_owner, leased_until,
        lease_proof_revision, pending_action, verified_transaction_id, original_transaction_id, verified_product_id, quantity,
        purchase_date, environment, finished_by, pruned_at
        """

    static func record(from row: SQLiteRow) -> OrderRecord {
        func state(_ index: Int32) -> OrderState? { row.optionalString(index).flatMap(OrderState.init(rawValue:)) }
        func date(_ index: Int32) -> Date? { row.optionalInt64(index).map(Date.init(epochMilliseconds:)) }
        let orderID = row.string(1)
        let grant: Grant? = (28...33).allSatisfy { row.isNull(Int32($0)) }
            ? nil
            : Grant(
                transactionID: row.optionalString(28), originalTransactionID: row.optionalString(29), productID: row.optionalString(30),
                quantity: row.optionalInt64(31).map(Int.init), purchaseDateMilliseconds: row.optionalInt64(32), environment: row.optionalString(33))
        return OrderRecord(
            reference: row.int64(0), orderID: orderID, productID: row.string(2), state: state(3) ?? .held, resumeState: state(4),
            heldResumeState: state(5), heldReason: row.optionalString(6), reason: row.optionalString(7),
            proof: OrderProof(receipt: row.optionalString(8), transactionID: row.optionalString(9), signedTransaction: row.optionalString(10)),
            proofRevision: row.int64(11), applicationUsername: row.optionalString(12), userID: row.optionalString(13),
            amount: row.optionalString(14), currency: row.optionalString(15), createdAt: date(16), contentHash: row.string(17),
            receivedAt: date(18) ?? .distantPast, updatedAt: date(19) ?? .distantPast, nextAttemptAt: date(20), attempts: row.int(21),
            deliveryAttempts: row.int(22), malformedAnswers: row.int(23),
            lease: row.optionalString(24).map { OrderRecord.Lease(owner: $0, until: date(25), proofRevision: row.optionalInt64(26)) },
            deferredAction: row.optionalString(27).flatMap { DeferredAction(storedForm: $0, orderID: orderID) },
            grant: grant, finishedBy: row.optionalString(34).flatMap(Finisher.init(rawValue:)), prunedAt: date(35))
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
                    .integer(reference), .integer(attempt.number), .text(attempt.kind.rawValue), .integer(request.startedAt.epochMilliseconds),
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
        return reference
    }

    /// The columns a plan sets, in the order of ``values(_:)``.
    private static let planColumns = [
        "state", "resume_state", "held_resume_state", "held_reason", "reason", "receipt", "transaction_id", "signed_transaction",
        "proof_revision", "application_username", "user_id", "amount", "currency", "created_at", "content_hash", "received_at",
        "updated_at", "next_attempt_at", "attempts", "delivery_attempts", "malformed_answers", "lease_owner", "leased_until",
        "lease_proof_revision", "pending_action", "verified_transaction_id", "original_transaction_id", "verified_product_id", "quantity",
        "purchase_date", "environment", "finished_by",
    ]

    private static let insertSQL =
        "INSERT INTO orders (order_id, product_id, raw, \(planColumns.joined(separator: ", "))) VALUES (?, ?, ?\(String(repeating: ", ?", count: planColumns.count)))"

    private static let updateSQL = "UPDATE orders SET \(planColumns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    private static func values(_ record: OrderRecord) -> [SQLiteValue] {
        let grant = record.grant
        return [
            .text(record.state.rawValue), .text(orNull: record.resumeState?.rawValue), .text(orNull: record.heldResumeState?.rawValue),
            .text(orNull: record.heldReason), .text(orNull: record.reason), .text(orNull: record.proof.receipt),
            .text(orNull: record.proof.transactionID), .text(orNull: record.proof.signedTransaction), .integer(record.proofRevision),
            .text(orNull: record.applicationUsername), .text(orNull: record.userID), .text(orNull: record.amount),
            .text(orNull: record.currency), .integer(orNull: record.createdAt?.epochMilliseconds), .text(record.contentHash),
            .integer(record.receivedAt.epochMilliseconds), .integer(record.updatedAt.epochMilliseconds),
            .integer(orNull: record.nextAttemptAt?.epochMilliseconds), .integer(Int64(record.attempts)), .integer(Int64(record.deliveryAttempts)),
            .integer(Int64(record.malformedAnswers)), .text(orNull: record.lease?.owner), .integer(orNull: record.lease?.until?.epochMilliseconds),
            .integer(orNull: record.lease?.proofRevision), .text(orNull: record.deferredAction?.storedForm),
            .text(orNull: grant?.transactionID), .text(orNull: grant?.originalTransactionID), .text(orNull: grant?.productID),
            .integer(orNull: grant?.quantity.map(Int64.init)), .integer(orNull: grant?.purchaseDateMilliseconds), .text(orNull: grant?.environment),
            .text(orNull: record.finishedBy?.rawValue),
        ]
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
}
