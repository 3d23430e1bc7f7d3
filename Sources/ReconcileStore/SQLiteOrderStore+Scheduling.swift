import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// Due-order selection per kind: a range scan of the partial index that holds exactly the
    /// orders of that kind waiting for an attempt. The state is a literal so that SQLite can
    /// prove the partial index applies, and `INDEXED BY` pins it: left to itself, the planner
    /// prefers the (state, received_at) index and sorts the whole backlog on every claim.
    static func dueOrdersSQL(_ kind: WorkKind) -> String {
        """
        SELECT id FROM orders INDEXED BY orders_due_\(kind.rawValue)
        WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ? AND state = '\(kind.waitingState.rawValue)'
        ORDER BY next_attempt_at
        LIMIT ?
        """
    }

    static let claimColumns = """
        id, order_id, product_id, receipt, transaction_id, signed_transaction, application_username, user_id, amount,
        currency, created_at, received_at, attempts, delivery_attempts, malformed_answers, proof_revision,
        verified_transaction_id, original_transaction_id, verified_product_id, quantity, purchase_date, environment
        """

    public func nextDueTime(_ kind: WorkKind) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                """
                SELECT next_attempt_at FROM orders INDEXED BY orders_due_\(kind.rawValue)
                WHERE next_attempt_at IS NOT NULL AND state = '\(kind.waitingState.rawValue)'
                ORDER BY next_attempt_at LIMIT 1
                """
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    /// The earliest next attempt of any kind.
    public func nextDueTime() throws -> Date? {
        try WorkKind.allCases.compactMap { try nextDueTime($0) }.min()
    }

    /// The ids of up to `limit` orders of `kind` due at `now`, earliest first (without leasing).
    public func dueOrderIDs(_ kind: WorkKind = .verify, at now: Date, limit: Int) throws -> [String] {
        try withConnection { connection in
            try connection.query(
                "SELECT order_id FROM orders WHERE id IN (\(Self.dueOrdersSQL(kind))) ORDER BY next_attempt_at",
                [.integer(now.epochMilliseconds), .integer(limit)]
            ) { $0.string(0) }
        }
    }

    // MARK: - Leases

    public func releaseLeases(now: Date) throws -> [String] {
        try write { connection in
            let leased = try connection.query("SELECT id, order_id, state FROM orders WHERE lease_owner IS NOT NULL") {
                ($0.int64(0), $0.string(1), OrderState(rawValue: $0.string(2)) ?? .held)
            }
            for (reference, orderID, state) in leased {
                let next: OrderState = state == .verifying ? .pending : state
                try connection.run(
                    """
                    UPDATE orders SET state = ?, lease_owner = NULL, leased_until = NULL, lease_proof_revision = NULL,
                        next_attempt_at = CASE WHEN ? IN ('pending', 'verified') THEN ? ELSE next_attempt_at END,
                        updated_at = ?
                    WHERE id = ?
                    """,
                    [.text(next.rawValue), .text(next.rawValue), .integer(now.epochMilliseconds), .integer(now.epochMilliseconds), .integer(reference)])
                if state == .verifying {
                    try Self.recordTransition(
                        connection, orderRef: reference, at: now, actor: .daemon, from: .verifying, to: .pending,
                        reason: "lease_released", detail: "the daemon stopped during an attempt; the order is due again")
                }
                _ = try Self.applyPendingAction(orderRef: reference, orderID: orderID, now: now, connection: connection)
            }
            return leased.map(\.1)
        }
    }

    public func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder] {
        try commit([], claims: [ClaimRequest(kind: kind, limit: limit, charge: charge, leaseUntil: leaseUntil)], owner: owner, now: now)
            .claimed[0]
    }

    /// Leases up to `request.limit` due orders inside the caller's transaction.
    private static func claim(_ request: ClaimRequest, owner: String, now: Date, connection: SQLiteConnection) throws -> [ClaimedOrder] {
        let kind = request.kind
        let charge = request.charge
        guard request.limit > 0 else { return [] }
        let orders = try connection.query(
            "SELECT \(Self.claimColumns) FROM orders WHERE id IN (\(Self.dueOrdersSQL(kind))) ORDER BY next_attempt_at",
            [.integer(now.epochMilliseconds), .integer(request.limit)]
        ) { row in
            let grant = row.isNull(16) && row.isNull(18)
                ? nil
                : Grant(
                    transactionID: row.optionalString(16), originalTransactionID: row.optionalString(17),
                    productID: row.optionalString(18), quantity: row.optionalInt64(19).map(Int.init),
                    purchaseDateMilliseconds: row.optionalInt64(20), environment: row.optionalString(21))
            let previous = kind == .verify ? row.int(12) : row.int(13)
            return ClaimedOrder(
                reference: row.int64(0), orderID: row.string(1), productID: row.string(2), kind: kind,
                proof: OrderProof(receipt: row.optionalString(3), transactionID: row.optionalString(4), signedTransaction: row.optionalString(5)),
                applicationUsername: row.optionalString(6), userID: row.optionalString(7), amount: row.optionalString(8),
                currency: row.optionalString(9), createdAt: row.optionalInt64(10).map(Date.init(epochMilliseconds:)),
                receivedAt: Date(epochMilliseconds: row.int64(11)), attempt: previous + (charge ? 1 : 0), charged: charge,
                malformedAnswers: row.int(14), grant: grant, proofRevision: row.int64(15))
        }
        for order in orders {
            let leased = kind == .verify ? OrderState.verifying : .verified
            try connection.run(
                """
                UPDATE orders SET state = ?, lease_owner = ?, leased_until = ?, lease_proof_revision = proof_revision,
                    next_attempt_at = NULL, updated_at = ?,
                    attempts = attempts + ?, delivery_attempts = delivery_attempts + ?
                WHERE id = ?
                """,
                [
                    .text(leased.rawValue), .text(owner), .integer(request.leaseUntil.epochMilliseconds), .integer(now.epochMilliseconds),
                    .integer(charge && kind == .verify ? 1 : 0), .integer(charge && kind == .deliver ? 1 : 0), .integer(order.reference),
                ])
            if kind == .verify {
                try Self.recordTransition(
                    connection, orderRef: order.reference, at: now, actor: .daemon, from: .pending, to: .verifying,
                    reason: charge ? "attempt" : "probe",
                    detail: charge ? "attempt \(order.attempt)" : "circuit probe (not charged)")
            }
        }
        return orders
    }

    // MARK: - Completions

    public func complete(_ completions: [AttemptCompletion], owner: String, now: Date) throws -> [CompletionResult] {
        guard !completions.isEmpty else { return [] }
        return try commit(completions, claims: [], owner: owner, now: now).results
    }

    public func commit(_ completions: [AttemptCompletion], claims: [ClaimRequest], owner: String, now: Date) throws -> TurnResult {
        guard !completions.isEmpty || claims.contains(where: { $0.limit > 0 }) else {
            return TurnResult(results: [], claimed: claims.map { _ in [] })
        }
        return try write { connection in
            let results = try completions.map { try Self.apply($0, owner: owner, now: now, connection: connection) }
            let claimed = try claims.map { try Self.claim($0, owner: owner, now: now, connection: connection) }
            return TurnResult(results: results, claimed: claimed)
        }
    }

    /// The row as the completion finds it.
    private struct LeasedRow {
        var state: OrderState
        var proofRevision: Int64
        var leaseProofRevision: Int64?
        var attempts: Int
        var deliveryAttempts: Int
    }

    private static func apply(_ completion: AttemptCompletion, owner: String, now: Date, connection: SQLiteConnection) throws -> CompletionResult {
        let order = completion.order
        guard
            let row = try connection.queryFirst(
                """
                SELECT state, proof_revision, lease_proof_revision, attempts, delivery_attempts
                FROM orders WHERE id = ? AND lease_owner = ?
                """, [.integer(order.reference), .text(owner)],
                { LeasedRow(
                    state: OrderState(rawValue: $0.string(0)) ?? .held, proofRevision: $0.int64(1),
                    leaseProofRevision: $0.optionalInt64(2), attempts: $0.int(3), deliveryAttempts: $0.int(4)) })
        else {
            return CompletionResult(
                orderID: order.orderID, productID: order.productID, from: .verifying, to: .verifying, reason: "lease_lost",
                attempts: order.attempt, applied: false)
        }
        var attemptRef: Int64?
        for record in completion.records {
            try connection.run(
                """
                INSERT INTO attempts (order_ref, number, kind, started_at, endpoint, environment, http_status, verifier_status,
                    latency_ms, outcome, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(order.reference), .integer(order.attempt), .text(order.kind.rawValue), .integer(record.startedAt.epochMilliseconds),
                    .text(record.endpoint.rawValue), .text(orNull: record.environment), .integer(orNull: record.httpStatus.map(Int64.init)),
                    .integer(orNull: record.verifierStatus.map(Int64.init)), .integer(record.latency.totalMilliseconds),
                    .text(record.outcome), .text(orNull: record.detail),
                ])
            attemptRef = connection.lastInsertRowID
        }

        // What the attempt decided, as an event of the lifecycle table.
        var event: OrderEvent
        var reason: String
        var detail: String?
        var nextAttempt: Date?
        var grant: Grant?
        var finishedBy: String?
        var countMalformed = false
        switch completion.resolution {
        case .retry(let at, let why, let malformed):
            event = .transientFailure
            reason = why
            nextAttempt = at
            countMalformed = malformed
        case .reject(let why, let more):
            event = .definitiveReject(escalate: false)
            reason = why
            detail = more
        case .escalate(let why, let more, let limits):
            event = limits ? .limitsHit : .definitiveReject(escalate: true)
            reason = why
            detail = more
        case .verified(let granted, let finishes, let by):
            event = .verified(finishesOrder: finishes)
            reason = by == "merchant" ? "granted" : "verified"
            grant = granted
            finishedBy = finishes ? by : nil
        case .delivered:
            event = .delivered
            reason = "delivered"
            finishedBy = "delivery"
        case .finishedWithoutDelivery:
            event = .delivered
            reason = "no_delivery_url"
            detail = "no delivery URL is configured: verified orders finish at once"
            finishedBy = "verifier"
        case .match(let items, let environment, let finishes):
            let claims = try claimsOf(ReceiptMatcher.candidates(in: items, for: order.matchKey).map(\.transactionID), connection: connection)
            switch ReceiptMatcher.match(items, for: order.matchKey, claims: claims) {
            case .matched(let item):
                try connection.run(
                    "INSERT OR IGNORE INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES (?, ?, ?, 'daemon')",
                    [.text(item.transactionID), .integer(order.reference), .integer(now.epochMilliseconds)])
                event = .verified(finishesOrder: finishes)
                reason = "verified"
                grant = Grant(item, environment: environment)
                finishedBy = finishes ? "verifier" : nil
            case .duplicateTransaction(let transactionID, let claimant):
                event = .definitiveReject(escalate: true)
                reason = "duplicate_transaction"
                detail = "transaction \(transactionID) is claimed by order \(claimant)"
            case .refunded:
                event = .definitiveReject(escalate: false)
                reason = "refunded"
                detail = "every matching purchase was refunded or revoked"
            case .noMatchingPurchase:
                event = .definitiveReject(escalate: true)
                reason = "no_matching_purchase"
                detail = "the receipt holds no unclaimed purchase of \(order.productID) for this order"
            }
        }

        // A reason may carry its explanation ("http_404: no such endpoint"): the stable word goes
        // to the reason column, the words to the detail.
        if let colon = reason.range(of: ": ") {
            let explanation = String(reason[colon.upperBound...])
            detail = [explanation, detail].compactMap { $0 }.joined(separator: "; ")
            reason = String(reason[..<colon.lowerBound])
        }

        // New proof during the attempt: a verdict against the old proof does not stand.
        let newProof = row.leaseProofRevision.map { $0 != row.proofRevision } ?? false
        if newProof, order.kind == .verify {
            switch event {
            case .definitiveReject, .limitsHit, .transientFailure:
                event = .transientFailure
                reason = "new_proof"
                detail = "new proof arrived during the attempt; it is tried next"
                nextAttempt = now
                countMalformed = false
            default:
                break
            }
        }

        let outcome = try OrderLifecycle.next(from: row.state, on: event)
        guard case .moveTo(let state) = outcome else {
            preconditionFailure("a completion always moves the order: \(row.state) × \(event)")
        }
        var resume: OrderState?
        if state == .escalated && row.state == .verified { resume = .verified }
        if state == .verified && nextAttempt == nil { nextAttempt = now }  // on to delivery, at once
        if !(state == .pending || state == .verified) { nextAttempt = nil }
        let refund = completion.charged ? 0 : (order.charged ? 1 : 0)

        try connection.run(
            """
            UPDATE orders SET state = ?, resume_state = ?, next_attempt_at = ?, reason = ?, updated_at = ?,
                lease_owner = NULL, leased_until = NULL, lease_proof_revision = NULL,
                attempts = attempts - ?, delivery_attempts = delivery_attempts - ?,
                malformed_answers = malformed_answers + ?,
                verified_transaction_id = COALESCE(?, verified_transaction_id),
                original_transaction_id = COALESCE(?, original_transaction_id),
                verified_product_id = COALESCE(?, verified_product_id), quantity = COALESCE(?, quantity),
                purchase_date = COALESCE(?, purchase_date), environment = COALESCE(?, environment),
                finished_by = COALESCE(?, finished_by)
            WHERE id = ?
            """,
            [
                .text(state.rawValue), .text(orNull: resume?.rawValue), .integer(orNull: nextAttempt?.epochMilliseconds),
                .text(reason), .integer(now.epochMilliseconds),
                .integer(order.kind == .verify ? refund : 0), .integer(order.kind == .deliver ? refund : 0),
                .integer(countMalformed ? 1 : 0),
                .text(orNull: grant?.transactionID), .text(orNull: grant?.originalTransactionID), .text(orNull: grant?.productID),
                .integer(orNull: grant?.quantity.map(Int64.init)), .integer(orNull: grant?.purchaseDateMilliseconds),
                .text(orNull: grant?.environment), .text(orNull: finishedBy), .integer(order.reference),
            ])
        var transitionDetail = detail
        if let nextAttempt, state == .pending || (state == .verified && order.kind == .deliver) {
            transitionDetail = [detail, "next attempt \(RFC3339.format(nextAttempt))"].compactMap { $0 }.joined(separator: "; ")
        }
        try recordTransition(
            connection, orderRef: order.reference, at: now, actor: .daemon, from: row.state, to: state, reason: reason,
            detail: transitionDetail, attemptRef: attemptRef)
        let attempts = (order.kind == .verify ? row.attempts : row.deliveryAttempts) - refund
        var result = CompletionResult(
            orderID: order.orderID, productID: order.productID, from: row.state, to: state, reason: reason, detail: detail,
            attempts: attempts, transactionID: grant?.transactionID ?? order.grant?.transactionID ?? order.proof.transactionID,
            nextAttemptAt: nextAttempt)
        // An operator's action that waited for this attempt applies now.
        if let operated = try applyPendingAction(orderRef: order.reference, orderID: order.orderID, now: now, connection: connection),
            case .applied(_, let final) = operated.outcome.result
        {
            result.to = final
            result.reason = operated.request.action.rawValue
            result.appliedAction = operated.request.action
            result.appliedBy = operated.request.actor
            result.nextAttemptAt = final == .pending || final == .verified ? now : nil
        }
        return result
    }

    /// Who holds the claims on these transaction ids.
    private static func claimsOf(_ transactionIDs: [String], connection: SQLiteConnection) throws -> [String: String] {
        var claims: [String: String] = [:]
        for transactionID in Set(transactionIDs) {
            if let claimant = try connection.queryFirst(
                "SELECT o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = ?",
                [.text(transactionID)], { $0.string(0) })
            {
                claims[transactionID] = claimant
            }
        }
        return claims
    }

    public func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int {
        try write { connection in
            var moved = 0
            for kind in kinds {
                // A range of the partial due index, per kind.
                try connection.run(
                    "UPDATE orders INDEXED BY orders_due_\(kind.rawValue) SET next_attempt_at = ? WHERE next_attempt_at IS NOT NULL AND next_attempt_at > ? AND state = '\(kind.waitingState.rawValue)'",
                    [.integer(limit.epochMilliseconds), .integer(limit.epochMilliseconds)])
                moved += connection.changes
            }
            return moved
        }
    }

    // MARK: - Waiting orders

    public func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult] {
        try write { connection in
            let rows = try connection.query(
                "SELECT id, order_id, product_id, attempts FROM orders WHERE state = 'waiting' AND received_at < ? ORDER BY received_at LIMIT ?",
                [.integer(cutoff.epochMilliseconds), .integer(limit)]
            ) { ($0.int64(0), $0.string(1), $0.string(2), $0.int(3)) }
            return try rows.map { reference, orderID, productID, attempts in
                try connection.run(
                    "UPDATE orders SET state = 'expired', reason = 'max_age', updated_at = ? WHERE id = ?",
                    [.integer(now.epochMilliseconds), .integer(reference)])
                try Self.recordTransition(
                    connection, orderRef: reference, at: now, actor: .daemon, from: .waiting, to: .expired, reason: "max_age",
                    detail: "no usable proof arrived within MaxAge")
                return CompletionResult(orderID: orderID, productID: productID, from: .waiting, to: .expired, reason: "max_age", attempts: attempts)
            }
        }
    }

    public func oldestWaitingReceivedAt() throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                "SELECT received_at FROM orders WHERE state = 'waiting' ORDER BY received_at LIMIT 1"
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    public func promoteWaiting(usableBy kind: VerifierKind, now: Date) throws -> Int {
        let usable: String
        switch kind {
        case .apple: usable = "receipt IS NOT NULL"
        case .http: usable = "(receipt IS NOT NULL OR transaction_id IS NOT NULL)"
        case .appstore: usable = "(receipt IS NOT NULL OR transaction_id IS NOT NULL OR signed_transaction IS NOT NULL)"
        }
        return try write { connection in
            let references = try connection.query("SELECT id FROM orders WHERE state = 'waiting' AND \(usable)") { $0.int64(0) }
            for reference in references {
                try connection.run(
                    "UPDATE orders SET state = 'pending', next_attempt_at = ?, reason = 'verifier_changed', updated_at = ? WHERE id = ?",
                    [.integer(now.epochMilliseconds), .integer(now.epochMilliseconds), .integer(reference)])
                try Self.recordTransition(
                    connection, orderRef: reference, at: now, actor: .daemon, from: .waiting, to: .pending, reason: "verifier_changed",
                    detail: "Kind=\(kind.rawValue) can verify the proof this order carries")
            }
            return references.count
        }
    }
}
