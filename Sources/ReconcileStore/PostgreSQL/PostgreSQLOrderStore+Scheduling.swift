import Foundation
import ReconcileCore

extension PostgreSQLOrderStore {
    /// Due orders of `kind`, earliest first, locked for leasing: a range scan of the partial index
    /// that holds exactly the orders of that kind waiting for an attempt (`$1` now, `$2` the
    /// limit). Rows another node is leasing are skipped, not waited for; a row another node
    /// changed since this statement began is re-checked against the condition before it is
    /// locked, so an order leased by a node that committed first is not returned.
    ///
    /// The state is written as a literal (one of two constants, never a value from outside) so
    /// that the planner can prove the partial index applies to every plan of the statement.
    static func dueOrdersSQL(_ kind: WorkKind) -> String {
        """
        \(selectRecords)
        WHERE \(DueOrders.condition(kind)) AND next_attempt_at IS NOT NULL AND next_attempt_at <= $1
        ORDER BY next_attempt_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
        """
    }

    static func nextDueSQL(_ kind: WorkKind) -> String {
        """
        SELECT next_attempt_at FROM orders
        WHERE \(DueOrders.condition(kind)) AND next_attempt_at IS NOT NULL
        ORDER BY next_attempt_at
        LIMIT 1
        """
    }

    public func nextDueTime(_ kind: WorkKind) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst(Self.nextDueSQL(kind)) { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    // MARK: - Leases

    /// Releases the leases of this node's earlier starts (at start-up: that start stopped, so
    /// their attempts are over). Other nodes' leases are theirs: they end by completion or,
    /// expired, by rescue.
    public func releaseLeases(now: Date) throws -> [String] {
        try write { connection in
            let leased = try connection.query(
                "\(Self.selectRecords) WHERE lease_owner IS NOT NULL AND left(lease_owner, $1) = $2 ORDER BY id FOR UPDATE",
                [.integer(Int64(node.count + 1)), .text(node + "/")], OrderColumns.record(from:))
            let lookups = PostgreSQLRuleLookups(connection: connection)
            for record in leased {
                _ = try Self.planAndWrite("release of order \(record.orderID)", connection: connection) {
                    (try LeaseRules.end(record, .released, now: now, lookups: lookups), ())
                }
            }
            // This node's leased actions too (an action's lease owner is its order's: `node/…`).
            let actions = try connection.query(
                "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.lease_owner IS NOT NULL AND left(x.lease_owner, $1) = $2 ORDER BY x.id FOR UPDATE OF x",
                [.integer(Int64(node.count + 1)), .text(node + "/")], OutboxColumns.action(from:))
            for action in actions { try Self.update(OutboxRules.release(action, now: now), connection: connection) }
            if !leased.isEmpty || !actions.isEmpty { try Self.notify(connection) }
            return leased.map(\.orderID)
        }
    }

    public func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder] {
        try commit([], claims: [ClaimRequest(kind: kind, limit: limit, charge: charge, leaseUntil: leaseUntil)], owner: owner, now: now)
            .claimed[0]
    }

    /// Leases up to `request.limit` due orders inside the caller's transaction (``LeaseRules``).
    private static func claim(_ request: ClaimRequest, owner: String, now: Date, connection: PostgreSQLConnection) throws -> [ClaimedOrder] {
        guard request.limit > 0 else { return [] }
        // Due by the caller's `now` (the protocol's): due times on the database's clock come
        // with the scheduler's database-clock contract (phase 2).
        let due = try connection.query(
            dueOrdersSQL(request.kind), [.integer(now.epochMilliseconds), .integer(request.limit)], OrderColumns.record(from:))
        guard !due.isEmpty else { return [] }
        // The lease runs for as long as the caller asked (`leaseUntil - now`), from the
        // database's clock: every node measures a lease by the same clock. History, updated_at
        // and the rest still use the caller's `now` until phase 2.
        let leaseLength = request.leaseUntil.timeIntervalSince(now)
        let leaseEnd = try databaseClock(connection).addingTimeInterval(leaseLength)
        return try due.map { record in
            var (plan, order) = LeaseRules.claim(record, request, owner: owner, now: now)
            plan.record.lease?.until = leaseEnd
            try write(plan, connection: connection)  // takes no claims: cannot conflict
            return order
        }
    }

    // MARK: - Completions

    public func complete(_ completions: [AttemptCompletion], owner: String, now: Date) throws -> [CompletionResult] {
        guard !completions.isEmpty else { return [] }
        return try commit(completions, claims: [], owner: owner, now: now).results
    }

    /// Applies completions under ``CompletionRules`` — each order read `FOR UPDATE`, so a
    /// completion whose lease another node or an operator took meanwhile writes nothing — then
    /// leases what `claims` ask for.
    public func commit(_ completions: [AttemptCompletion], claims: [ClaimRequest], owner: String, now: Date) throws -> TurnResult {
        guard !completions.isEmpty || claims.contains(where: { $0.limit > 0 }) else {
            return TurnResult(results: [], claimed: claims.map { _ in [] })
        }
        return try write { connection in
            var records = try Self.records(references: completions.map(\.order.reference), connection: connection)
            let lookups = PostgreSQLRuleLookups(connection: connection)
            // A lease is the owner's until it ends on the database's clock: after that, the
            // order may be rescued at any moment, so an outcome that comes late writes nothing.
            let databaseNow = completions.isEmpty ? now : try Self.databaseClock(connection)
            var taken: [String] = []
            let results = try completions.map { completion in
                let reference = completion.order.reference
                guard let record = records[reference] else { throw PostgreSQLStoreError.orderVanished(reference: reference) }
                if let lease = record.lease, lease.owner == owner, let until = lease.until, until < databaseNow {
                    return CompletionResult(
                        orderID: record.orderID, productID: record.productID, from: record.state, to: record.state,
                        reason: Reason(
                            ReasonCode.leaseLost,
                            detail: "the lease ended at \(RFC3339.format(until)), before the outcome came; another node may rescue the order"),
                        attempts: completion.order.attempt, applied: false)
                }
                let (result, written) = try Self.planAndWrite("completion of order \(completion.order.orderID)", connection: connection) {
                    let decided = try CompletionRules.plan(completion, for: record, owner: owner, now: now, lookups: lookups)
                    return (decided.plan, decided.result)
                }
                if let written {
                    records[reference] = written.record
                    taken += written.takenTransactions
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

    // MARK: - Clock steps

    public func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int {
        try write { connection in
            try kinds.reduce(0) { moved, kind in
                // A range of the partial due index, per kind.
                moved + (try connection.run(
                    """
                    UPDATE orders SET next_attempt_at = $1
                    WHERE \(DueOrders.condition(kind)) AND next_attempt_at IS NOT NULL AND next_attempt_at > $1
                    """, [.integer(limit.epochMilliseconds)]))
            }
        }
    }

    // MARK: - Waiting orders

    public func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult] {
        try write { connection in
            // Orders another node is expiring (or ingesting new proof for) are skipped.
            let waiting = try connection.query(
                "\(Self.selectRecords) WHERE state = 'waiting' AND received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED",
                [.integer(cutoff.epochMilliseconds), .integer(limit)], OrderColumns.record(from:))
            return try waiting.map { record in
                try Self.planAndWrite("expiry of order \(record.orderID)", connection: connection) {
                    let decided = WaitingRules.expire(record, now: now)
                    return (decided.plan, decided.result)
                }.outcome
            }
        }
    }

    public func oldestWaitingReceivedAt() throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst("SELECT received_at FROM orders WHERE state = 'waiting' ORDER BY received_at LIMIT 1") {
                Date(epochMilliseconds: $0.int64(0))
            }
        }
    }

    public func promoteWaiting(usableBy verifiers: ConfiguredVerifiers, now: Date) throws -> Int {
        try write { connection in
            let waiting = try connection.query(
                "\(Self.selectRecords) WHERE state = 'waiting' ORDER BY id FOR UPDATE", [], OrderColumns.record(from:))
            var promoted = 0
            for record in waiting {
                let (_, written) = try Self.planAndWrite("promotion of order \(record.orderID)", connection: connection) {
                    (WaitingRules.promote(record, usableBy: verifiers, now: now), ())
                }
                if written != nil { promoted += 1 }
            }
            return promoted
        }
    }
}
