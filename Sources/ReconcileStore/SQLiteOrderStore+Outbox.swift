import Foundation
import ReconcileCore

/// The outbox (DESIGN §5a) in SQLite: actions leased like orders (one daemon per store), due
/// selection a range of the partial index `outbox_due`, and every change a rule's.
extension SQLiteOrderStore {
    /// Pending actions of one endpoint due at `?`, earliest first, with their orders' columns;
    /// one behind an earlier action of its kind for the same order that is still pending waits
    /// for it (``OutboxColumns/inOrder``).
    static let dueActionsSQL = """
        SELECT \(OutboxColumns.action), \(OutboxColumns.claimExtra)
        FROM outbox AS x INDEXED BY outbox_due JOIN orders o ON o.id = x.order_ref
        WHERE x.endpoint = ? AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL AND x.next_attempt_at <= ?
        AND \(OutboxColumns.inOrder)
        ORDER BY x.next_attempt_at
        LIMIT ?
        """

    public func claimActions(
        endpoint: VerificationEndpoint, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool
    ) throws -> [ClaimedAction] {
        guard limit > 0 else { return [] }
        return try write { connection in
            let due = try connection.query(
                Self.dueActionsSQL, [.text(endpoint.rawValue), .integer(now.epochMilliseconds), .integer(limit)]
            ) { OutboxColumns.claimed(from: $0, charged: charge) }
            return try due.map { claimed in
                var claimed = claimed
                claimed.action = OutboxRules.claim(claimed.action, owner: owner, leaseUntil: leaseUntil, charge: charge, now: now)
                try Self.update(claimed.action, connection: connection)
                return claimed
            }
        }
    }

    public func nextActionDueTime(endpoint: VerificationEndpoint) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                """
                SELECT x.next_attempt_at FROM outbox AS x INDEXED BY outbox_due
                WHERE x.endpoint = ? AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL AND \(OutboxColumns.inOrder)
                ORDER BY x.next_attempt_at LIMIT 1
                """, [.text(endpoint.rawValue)]
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    public func completeActions(_ completions: [OutboxCompletion], owner: String, now: Date) throws -> [OutboxResult] {
        guard !completions.isEmpty else { return [] }
        return try write { connection in
            try completions.map { completion in
                let claimed = completion.claimed.action
                guard let action = try connection.queryFirst(
                    "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.id = ?", [.integer(claimed.reference)], OutboxColumns.action(from:))
                else {
                    return OutboxResult(
                        orderID: claimed.orderID, kind: claimed.kind, endpoint: claimed.endpoint, state: claimed.state,
                        reason: Reason(ReasonCode.leaseLost), attempts: claimed.attempts, applied: false)
                }
                let (after, result) = OutboxRules.complete(completion, for: action, owner: owner, now: now)
                if let after { try Self.update(after, connection: connection) }
                return result
            }
        }
    }

    public func actions(orderID: String) throws -> [OutboxAction] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE o.order_id = ? ORDER BY x.id", [.text(orderID)],
                OutboxColumns.action(from:))
        }
    }

    public func pendingActions(dueBy: Date?, limit: Int) throws -> [OutboxAction] {
        try withConnection { connection in
            var sql = "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.state = 'pending'"
            var parameters: [SQLiteValue] = []
            if let dueBy {
                sql += " AND x.next_attempt_at IS NOT NULL AND x.next_attempt_at <= ?"
                parameters.append(.integer(dueBy.epochMilliseconds))
            }
            sql += " ORDER BY x.next_attempt_at IS NULL, x.next_attempt_at, x.id LIMIT ?"
            return try connection.query(sql, parameters + [.integer(limit)], OutboxColumns.action(from:))
        }
    }

    public func outboxSummary() throws -> OutboxSummary {
        try withConnection { connection in
            try connection.readTransaction { try Self.outboxSummary(connection) }
        }
    }

    /// The outbox's backlog inside the caller's read transaction.
    static func outboxSummary(_ connection: SQLiteConnection) throws -> OutboxSummary {
        let counts = try connection.query("SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'escalated') GROUP BY state") {
            ($0.string(0), $0.int(1))
        }
        var summary = OutboxSummary()
        for (state, count) in counts {
            if state == OutboxState.pending.rawValue { summary.pending = count } else { summary.escalated = count }
        }
        summary.oldestPendingCreatedAt = try connection.queryFirst(
            "SELECT created_at FROM outbox INDEXED BY outbox_pending WHERE state = 'pending' ORDER BY created_at LIMIT 1"
        ) { Date(epochMilliseconds: $0.int64(0)) }
        summary.nextAttemptAt = try connection.queryFirst(
            "SELECT min(next_attempt_at) FROM outbox WHERE state = 'pending' AND next_attempt_at IS NOT NULL"
        ) { $0.optionalInt64(0).map(Date.init(epochMilliseconds:)) } ?? nil
        return summary
    }
}
