import Foundation
import ReconcileCore

/// The outbox (DESIGN §5a) on the shared store: pending actions leased with `FOR UPDATE SKIP
/// LOCKED` (two nodes never send one action at once), leases ending on the database's clock,
/// completions guarded by owner and lease, every change a rule's.
extension PostgreSQLOrderStore {
    public func claimActions(
        endpoint: VerificationEndpoint, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool
    ) throws -> [ClaimedAction] {
        guard limit > 0 else { return [] }
        return try write { connection in
            let due = try connection.query(
                """
                SELECT \(OutboxColumns.action), \(OutboxColumns.claimExtra) \(OutboxColumns.from)
                WHERE x.endpoint = $1 AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL AND x.next_attempt_at <= $2
                AND \(OutboxColumns.inOrder)
                ORDER BY x.next_attempt_at
                LIMIT $3
                FOR UPDATE OF x SKIP LOCKED
                """, [.text(endpoint.rawValue), .integer(now.epochMilliseconds), .integer(Int64(limit))]
            ) { OutboxColumns.claimed(from: $0, charged: charge) }
            guard !due.isEmpty else { return [] }
            let leaseEnd = try Self.databaseClock(connection).addingTimeInterval(leaseUntil.timeIntervalSince(now))
            return try due.map { claimed in
                var claimed = claimed
                claimed.action = OutboxRules.claim(claimed.action, owner: owner, leaseUntil: leaseEnd, charge: charge, now: now)
                try Self.update(claimed.action, connection: connection)
                return claimed
            }
        }
    }

    public func nextActionDueTime(endpoint: VerificationEndpoint) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                """
                SELECT x.next_attempt_at FROM outbox x
                WHERE x.endpoint = $1 AND x.state = 'pending' AND x.next_attempt_at IS NOT NULL AND \(OutboxColumns.inOrder)
                ORDER BY x.next_attempt_at LIMIT 1
                """, [.text(endpoint.rawValue)]
            ) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    public func completeActions(_ completions: [OutboxCompletion], owner: String, now: Date) throws -> [OutboxResult] {
        guard !completions.isEmpty else { return [] }
        return try write { connection in
            // Locked in key order: no deadlock with another node's completions.
            let references = completions.map(\.claimed.action.reference)
            let rows = try connection.query(
                "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.id = ANY($1::bigint[]) ORDER BY x.id FOR UPDATE OF x",
                [.integerArray(references)], OutboxColumns.action(from:))
            var actions = Dictionary(rows.map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
            return try completions.map { completion in
                let claimed = completion.claimed.action
                guard let action = actions[claimed.reference] else {
                    return OutboxResult(
                        orderID: claimed.orderID, kind: claimed.kind, endpoint: claimed.endpoint, state: claimed.state,
                        reason: Reason(ReasonCode.leaseLost), attempts: claimed.attempts, applied: false)
                }
                let (after, result) = OutboxRules.complete(completion, for: action, owner: owner, now: now)
                if let after {
                    try Self.update(after, connection: connection)
                    actions[claimed.reference] = after
                }
                return result
            }
        }
    }

    public func actions(orderID: String) throws -> [OutboxAction] {
        try withConnection { connection in
            try connection.query(
                "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE o.order_id = $1 ORDER BY x.id", [.text(orderID)],
                OutboxColumns.action(from:))
        }
    }

    public func pendingActions(dueBy: Date?, limit: Int) throws -> [OutboxAction] {
        try withConnection { connection in
            var sql = "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.state = 'pending'"
            var parameters: [PostgreSQLValue] = []
            if let dueBy {
                sql += " AND x.next_attempt_at IS NOT NULL AND x.next_attempt_at <= $1"
                parameters.append(.integer(dueBy.epochMilliseconds))
            }
            sql += " ORDER BY x.next_attempt_at IS NULL, x.next_attempt_at, x.id LIMIT $\(parameters.count + 1)"
            return try connection.query(sql, parameters + [.integer(Int64(limit))], OutboxColumns.action(from:))
        }
    }

    public func outboxSummary() throws -> OutboxSummary {
        try withConnection { connection in
            try connection.transaction {
                let counts = try connection.query(
                    "SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'escalated') GROUP BY state"
                ) { ($0.string(0), $0.int(1)) }
                var summary = OutboxSummary()
                for (state, count) in counts {
                    if state == OutboxState.pending.rawValue { summary.pending = count } else { summary.escalated = count }
                }
                summary.oldestPendingCreatedAt = try connection.queryFirst(
                    "SELECT created_at FROM outbox WHERE state = 'pending' ORDER BY created_at LIMIT 1"
                ) { Date(epochMilliseconds: $0.int64(0)) }
                summary.nextAttemptAt = try connection.queryFirst(
                    "SELECT next_attempt_at FROM outbox WHERE state = 'pending' AND next_attempt_at IS NOT NULL ORDER BY next_attempt_at LIMIT 1"
                ) { Date(epochMilliseconds: $0.int64(0)) }
                return summary
            }
        }
    }
}
