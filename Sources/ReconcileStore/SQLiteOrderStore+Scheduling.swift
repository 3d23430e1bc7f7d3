import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// Due-order selection per kind: a range scan of the partial index that holds exactly the
    /// orders of that kind waiting for an attempt. The state is a literal so that SQLite can
    /// prove the partial index applies, and `INDEXED BY` pins it: left to itself, the planner
    /// prefers the (state, received_at) index and sorts the whole backlog on every claim.
    static func dueOrdersSQL(_ kind: WorkKind) -> String {
        """
        SELECT id FROM orders INDEXED BY \(DueOrders.index(kind))
        WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ? AND \(DueOrders.condition(kind))
        ORDER BY next_attempt_at
        LIMIT ?
        """
    }

    public func nextDueTime(_ kind: WorkKind) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(
                """
                SELECT next_attempt_at FROM orders INDEXED BY \(DueOrders.index(kind))
                WHERE next_attempt_at IS NOT NULL AND \(DueOrders.condition(kind))
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
            let leased = try connection.query("SELECT \(Self.recordColumns) FROM orders WHERE lease_owner IS NOT NULL", [], Self.record(from:))
            let lookups = SQLiteRuleLookups(connection: connection)
            for record in leased {
                try Self.write(try LeaseRules.end(record, .released, now: now, lookups: lookups), connection: connection)
            }
            let actions = try connection.query(
                "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.lease_owner IS NOT NULL", [], OutboxColumns.action(from:))
            for action in actions { try Self.update(OutboxRules.release(action, now: now), connection: connection) }
            return leased.map(\.orderID)
        }
    }

    public func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder] {
        try commit([], claims: [ClaimRequest(kind: kind, limit: limit, charge: charge, leaseUntil: leaseUntil)], owner: owner, now: now)
            .claimed[0]
    }

    /// Leases up to `request.limit` due orders inside the caller's transaction.
    private static func claim(_ request: ClaimRequest, owner: String, now: Date, connection: SQLiteConnection) throws -> [ClaimedOrder] {
        guard request.limit > 0 else { return [] }
        let due = try connection.query(
            "SELECT \(recordColumns) FROM orders WHERE id IN (\(dueOrdersSQL(request.kind))) ORDER BY next_attempt_at",
            [.integer(now.epochMilliseconds), .integer(request.limit)], record(from:))
        return try due.map { record in
            let (plan, order) = LeaseRules.claim(record, request, owner: owner, now: now)
            try write(plan, connection: connection)
            return order
        }
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
            let lookups = SQLiteRuleLookups(connection: connection)
            var taken: [String] = []
            let results = try completions.map { completion in
                guard let record = try Self.record(reference: completion.order.reference, connection: connection) else {
                    return CompletionResult(
                        orderID: completion.order.orderID, productID: completion.order.productID, from: .verifying, to: .verifying,
                        reason: Reason(ReasonCode.leaseLost), attempts: completion.order.attempt, applied: false)
                }
                let (plan, result) = try CompletionRules.plan(completion, for: record, owner: owner, now: now, lookups: lookups)
                if let plan {
                    try Self.write(plan, connection: connection)
                    taken += plan.takenTransactions
                }
                return result
            }
            // Before the claims: a refund that waited for one of these attempts, or came before
            // its order, must end the order before this same turn could lease it for delivery.
            let applied = try Self.applyWaitingNotifications(of: completions.map(\.order.reference), now: now, connection: connection)
                + Self.applyUnmatchedNotifications(about: taken, now: now, connection: connection)
            let claimed = try claims.map { try Self.claim($0, owner: owner, now: now, connection: connection) }
            return TurnResult(results: results, claimed: claimed, notifications: applied)
        }
    }

    public func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int {
        try write { connection in
            var moved = 0
            for kind in kinds {
                // A range of the partial due index, per kind.
                try connection.run(
                    "UPDATE orders INDEXED BY \(DueOrders.index(kind)) SET next_attempt_at = ? WHERE next_attempt_at IS NOT NULL AND next_attempt_at > ? AND \(DueOrders.condition(kind))",
                    [.integer(limit.epochMilliseconds), .integer(limit.epochMilliseconds)])
                moved += connection.changes
            }
            return moved
        }
    }

    // MARK: - Waiting orders

    public func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult] {
        try write { connection in
            let waiting = try connection.query(
                "SELECT \(Self.recordColumns) FROM orders WHERE state = 'waiting' AND received_at < ? ORDER BY received_at LIMIT ?",
                [.integer(cutoff.epochMilliseconds), .integer(limit)], Self.record(from:))
            return try waiting.map { record in
                let (plan, result) = WaitingRules.expire(record, now: now)
                try Self.write(plan, connection: connection)
                return result
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

    public func promoteWaiting(usableBy verifiers: ConfiguredVerifiers, now: Date) throws -> Int {
        // Only orders with some proof can be promoted: the rule decides which proof counts.
        try write { connection in
            let waiting = try connection.query(
                """
                SELECT \(Self.recordColumns) FROM orders
                WHERE state = 'waiting' AND (receipt IS NOT NULL OR transaction_id IS NOT NULL OR signed_transaction IS NOT NULL
                    OR purchase_token IS NOT NULL)
                """, [], Self.record(from:))
            var promoted = 0
            for record in waiting {
                guard let plan = WaitingRules.promote(record, usableBy: verifiers, now: now) else { continue }
                try Self.write(plan, connection: connection)
                promoted += 1
            }
            return promoted
        }
    }
}
