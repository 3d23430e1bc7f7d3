import Foundation
import ReconcileCore
import ReconcileFoundation

/// The outbox (DESIGN §5a): actions leased by endpoint like orders (on a shared store with
/// `FOR UPDATE SKIP LOCKED`, so two nodes never send one action at once, and leases ending on
/// the lease clock), completed under their lease, every change a rule's.
extension RelationalOrderStore {
    public func claimActions(
        endpoint: VerificationEndpoint, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool
    ) throws -> [ClaimedAction] {
        guard limit > 0 else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            // Due actions of one endpoint, earliest first, with their orders' columns: a range of
            // the partial index `outbox_due`. One behind an earlier action of its kind for the
            // same order that is still pending waits for it (``OutboxColumns/inOrder``).
            let due = try connection.fetchAll(
                """
                SELECT \(raw: OutboxColumns.action), \(raw: OutboxColumns.claimExtra)
                FROM outbox AS x \(.indexedBy("outbox_due")) JOIN orders o ON o.id = x.order_ref
                WHERE x.endpoint = \(endpoint.rawValue) AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL
                AND x.next_attempt_at <= \(now) AND \(raw: OutboxColumns.inOrder)
                ORDER BY x.next_attempt_at
                LIMIT \(limit)
                \(.forUpdateOfSkipLocked("x"))
                """
            ) { try OutboxColumns.claimed(from: $0, charged: charge) }
            guard !due.isEmpty else { return [] }
            let leaseEnd = try leaseClock(connection).map { $0.addingTimeInterval(leaseUntil.timeIntervalSince(now)) } ?? leaseUntil
            return try due.map { claimed in
                var claimed = claimed
                claimed.action = OutboxRules.claim(claimed.action, owner: owner, leaseUntil: leaseEnd, charge: charge, now: now)
                try transaction.update(claimed.action)
                return claimed
            }
        }
    }

    public func nextActionDueTime(endpoint: VerificationEndpoint) throws -> Date? {
        try withConnection { connection in
            try connection.fetchOne(
                """
                SELECT x.next_attempt_at FROM outbox AS x \(.indexedBy("outbox_due"))
                WHERE x.endpoint = \(endpoint.rawValue) AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL
                AND \(raw: OutboxColumns.inOrder)
                ORDER BY x.next_attempt_at LIMIT 1
                """
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    public func completeActions(_ completions: [OutboxCompletion], owner: String, now: Date) throws -> [OutboxResult] {
        guard !completions.isEmpty else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            // Locked in key order: no deadlock with another node's completions.
            let found = try transaction.actions(
                """
                SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from)
                WHERE x.id \(in: completions.map(\.claimed.action.reference)) ORDER BY x.id \(.forUpdateOf("x"))
                """)
            var actions = Dictionary(found.map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
            return try completions.map { completion in
                let claimed = completion.claimed.action
                guard let action = actions[claimed.reference] else {
                    return OutboxResult(
                        orderID: claimed.orderID, kind: claimed.kind, endpoint: claimed.endpoint, state: claimed.state,
                        reason: Reason(.leaseLost), attempts: claimed.attempts, applied: false)
                }
                let (after, result) = OutboxRules.complete(completion, for: action, owner: owner, now: now)
                if let after {
                    try transaction.update(after)
                    actions[claimed.reference] = after
                }
                return result
            }
        }
    }

    public func actions(orderID: String) throws -> [OutboxAction] {
        try withConnection { connection in
            try StoreTransaction(connection).actions(
                "SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from) WHERE o.order_id = \(orderID) ORDER BY x.id")
        }
    }

    public func pendingActions(dueBy: Date?, limit: Int) throws -> [OutboxAction] {
        try withConnection { connection in
            let due: SQLStatement = dueBy.map { " AND x.next_attempt_at IS NOT NULL AND x.next_attempt_at <= \($0)" } ?? ""
            return try StoreTransaction(connection).actions(
                """
                SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from) WHERE x.state = 'pending'\(due)
                ORDER BY x.next_attempt_at IS NULL, x.next_attempt_at, x.id LIMIT \(limit)
                """)
        }
    }

    public func outboxSummary() throws -> OutboxSummary {
        try readSnapshot { connection in try Self.outboxSummary(connection) }
    }

    /// The outbox's backlog inside the caller's read snapshot.
    package static func outboxSummary(_ connection: Connection) throws -> OutboxSummary {
        let counts = try connection.fetchAll("SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'escalated') GROUP BY state") {
            ($0.string(0), $0.int(1))
        }
        var summary = OutboxSummary()
        for (state, count) in counts {
            if state == OutboxState.pending.rawValue { summary.pending = count } else { summary.escalated = count }
        }
        summary.oldestPendingCreatedAt = try connection.fetchOne(
            "SELECT created_at FROM outbox \(.indexedBy("outbox_pending")) WHERE state = 'pending' ORDER BY created_at LIMIT 1"
        ) { Date(epochMilliseconds: $0.int64(0)) }
        summary.nextAttemptAt = try connection.fetchOne(
            "SELECT next_attempt_at FROM outbox WHERE state = 'pending' AND next_attempt_at IS NOT NULL ORDER BY next_attempt_at LIMIT 1"
        ) { Date(epochMilliseconds: $0.int64(0)) }
        return summary
    }
}
