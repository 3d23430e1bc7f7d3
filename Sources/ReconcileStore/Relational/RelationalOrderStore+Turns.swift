import Foundation
import ReconcileCore
import ReconcileFoundation

/// Ingest and the scheduler's turns: spool files taken in, leases released at start, due orders
/// leased, attempts completed, waiting orders expired or promoted — each read → rule → write.
extension RelationalOrderStore {
    // MARK: - Ingest

    /// Commits a batch of spool files (DESIGN §3) under ``IngestRules``. On a shared store it is
    /// idempotent across nodes: two nodes taking in the same file store one order (the second
    /// finds it `unchanged`), and two taking in different files of one order apply both.
    public func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        guard !candidates.isEmpty else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            // The stored orders of the batch, read (and on a shared store locked, in key order)
            // in one statement up front.
            var stored = try transaction.records(orderIDs: candidates.map(\.submission.orderID))
            var sequence = Array(candidates.indices)
            if transaction.isShared {
                // New orders inserted in order-id order: two nodes taking in overlapping batches
                // wait for each other instead of deadlocking. Files of one order keep their order.
                sequence.sort { (candidates[$0].submission.orderID, $0) < (candidates[$1].submission.orderID, $1) }
            }
            var outcomes = [IngestOutcome?](repeating: nil, count: candidates.count)
            // The batch's new orders (the first file of each order id the store does not hold)
            // are inserted together: on PostgreSQL one round trip for all their rows.
            var seen = Set<String>()
            var fresh: [(index: Int, plan: OrderPlan, outcome: IngestOutcome)] = []
            for index in sequence where seen.insert(candidates[index].submission.orderID).inserted {
                guard stored[candidates[index].submission.orderID] == nil else { continue }
                let decided = IngestRules.plan(candidates[index], existing: nil, verifiers: verifiers, now: now)
                if let plan = decided.plan, plan.record.reference == 0, plan.claims.isEmpty { fresh.append((index, plan, decided.outcome)) }
            }
            var insertedTogether = Set<Int>()
            var lost = Set<Int>()
            for (entry, reference) in zip(fresh, try transaction.writeNew(fresh.map(\.plan))) {
                guard let reference else {
                    // Another node inserted the order meanwhile: planned again below, on its row.
                    lost.insert(entry.index)
                    continue
                }
                var record = entry.plan.record
                record.reference = reference
                stored[record.orderID] = record
                outcomes[entry.index] = entry.outcome
                insertedTogether.insert(entry.index)
            }
            for index in sequence where !insertedTogether.contains(index) {
                let candidate = candidates[index]
                let orderID = candidate.submission.orderID
                var retry = lost.contains(index)
                let (outcome, written) = try transaction.planAndWrite("ingest of order \(orderID)") {
                    // A try that lost a race (another node inserted the order) reads it again.
                    let existing = retry ? try transaction.record(orderID: orderID) : stored[orderID]
                    retry = true
                    let decided = IngestRules.plan(candidate, existing: existing, verifiers: verifiers, now: now)
                    return (decided.plan, decided.outcome)
                }
                outcomes[index] = outcome
                // A later file of the batch sees this one.
                if let written { stored[orderID] = written.record }
            }
            // Other nodes wake for the new orders (when this transaction commits).
            try wakeNodes(connection)
            return outcomes.map { $0! }
        }
    }

    // MARK: - Leases

    /// Releases the leases of ``releasedLeasePrefix``'s owners (every lease on a store with one
    /// daemon): orders left `verifying` go back to `pending`, due now; outbox actions in flight
    /// are due again now.
    public func releaseLeases(now: Date) throws -> [String] {
        try write { connection in
            let transaction = StoreTransaction(connection)
            func mine(_ column: String) -> SQLStatement {
                guard let prefix = releasedLeasePrefix else { return "\(raw: column) IS NOT NULL" }
                return "\(raw: column) IS NOT NULL AND substr(\(raw: column), 1, \(prefix.count)) = \(prefix)"
            }
            let leased = try transaction.records(
                "\(OrderColumns.select()) WHERE \(mine("o.lease_owner")) ORDER BY o.id \(.forUpdateOf("o"))")
            for record in leased {
                _ = try transaction.planAndWrite("release of order \(record.orderID)") {
                    (try LeaseRules.end(record, .released, now: now, lookups: transaction), ())
                }
            }
            // Leased actions too (an action's lease owner is its order's).
            let actions = try transaction.actions(
                "SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from) WHERE \(mine("x.lease_owner")) ORDER BY x.id \(.forUpdateOf("x"))")
            for action in actions { try transaction.update(OutboxRules.release(action, now: now)) }
            if !leased.isEmpty || !actions.isEmpty { try wakeNodes(connection) }
            return leased.map(\.orderID)
        }
    }

    /// Due orders of `kind` at `now`, up to `limit` (``StoreStatements/due(_:)``).
    package static func dueOrders(_ kind: WorkKind, now: Date, limit: Int) -> SQLStatement {
        StoreStatements.due(kind)([.time(now), .integer(limit)])
    }

    public func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder] {
        try commit([], claims: [ClaimRequest(kind: kind, limit: limit, charge: charge, leaseUntil: leaseUntil)], owner: owner, now: now)
            .claimed[0]
    }

    /// Leases up to `request.limit` due orders inside the transaction (``LeaseRules``). The lease
    /// runs for as long as the caller asked, from ``leaseClock(_:)``.
    private func claim(_ request: ClaimRequest, owner: String, now: Date, in transaction: StoreTransaction<Connection>) throws -> [ClaimedOrder] {
        guard request.limit > 0 else { return [] }
        let due = try transaction.records(Self.dueOrders(request.kind, now: now, limit: request.limit))
        guard !due.isEmpty else { return [] }
        let leaseEnd = try leaseClock(transaction.connection).map { $0.addingTimeInterval(request.leaseUntil.timeIntervalSince(now)) }
        return try due.map { record in
            var (plan, order) = LeaseRules.claim(record, request, owner: owner, now: now)
            if let leaseEnd { plan.record.lease?.until = leaseEnd }
            try transaction.write(plan)  // takes no claims: cannot conflict
            return order
        }
    }

    // MARK: - Completions

    public func complete(_ completions: [AttemptCompletion], owner: String, now: Date) throws -> [CompletionResult] {
        guard !completions.isEmpty else { return [] }
        return try commit(completions, claims: [], owner: owner, now: now).results
    }

    /// One scheduler turn in one transaction: completions under ``CompletionRules`` (each order
    /// read locked, so a completion whose lease another node or an operator took meanwhile
    /// writes nothing), waiting and unmatched notifications their attempts released, then the
    /// leases `claims` ask for.
    public func commit(_ completions: [AttemptCompletion], claims: [ClaimRequest], owner: String, now: Date) throws -> TurnResult {
        guard !completions.isEmpty || claims.contains(where: { $0.limit > 0 }) else {
            return TurnResult(results: [], claimed: claims.map { _ in [] })
        }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            var records = try transaction.records(references: completions.map(\.order.reference))
            // A lease is the owner's until it ends on the lease clock: after that, the order may
            // be rescued at any moment, so an outcome that comes late writes nothing.
            let leaseNow = completions.isEmpty ? nil : try leaseClock(connection)
            var taken: [String] = []
            let results = try completions.map { completion in
                let reference = completion.order.reference
                guard let record = records[reference] else {
                    guard !transaction.isShared else { throw StoreError.orderVanished(reference: reference) }
                    return CompletionResult(
                        orderID: completion.order.orderID, productID: completion.order.productID, from: .verifying, to: .verifying,
                        reason: Reason(.leaseLost), attempts: completion.order.attempt, applied: false)
                }
                if let leaseNow, let lease = record.lease, lease.owner == owner, let until = lease.until, until < leaseNow {
                    return CompletionResult(
                        orderID: record.orderID, productID: record.productID, from: record.state, to: record.state,
                        reason: Reason(
                            ReasonCode.leaseLost,
                            detail: "the lease ended at \(RFC3339.format(until)), before the outcome came; another node may rescue the order"),
                        attempts: completion.order.attempt, applied: false)
                }
                let (result, written) = try transaction.planAndWrite("completion of order \(completion.order.orderID)") {
                    let decided = try CompletionRules.plan(completion, for: record, owner: owner, now: now, lookups: transaction)
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
            let applied = try transaction.applyWaitingNotifications(of: completions.map(\.order.reference), now: now)
                + transaction.applyUnmatchedNotifications(about: taken, now: now)
            let claimed = try claims.map { try claim($0, owner: owner, now: now, in: transaction) }
            return TurnResult(results: results, claimed: claimed, notifications: applied)
        }
    }

    // MARK: - Clock steps

    public func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int {
        try write { connection in
            try kinds.reduce(0) { moved, kind in
                // A range of the partial due index, per kind.
                moved + (try connection.perform(
                    """
                    UPDATE orders \(.indexedBy(DueOrders.index(kind))) SET next_attempt_at = \(limit)
                    WHERE next_attempt_at IS NOT NULL AND next_attempt_at > \(limit) AND \(raw: DueOrders.condition(kind))
                    """))
            }
        }
    }

    public func makeDue(of kinds: [WorkKind], dueFrom from: Date, to: Date, now: Date) throws -> Int {
        try write { connection in
            try kinds.reduce(0) { moved, kind in
                moved + (try connection.perform(
                    """
                    UPDATE orders \(.indexedBy(DueOrders.index(kind))) SET next_attempt_at = \(now)
                    WHERE next_attempt_at IS NOT NULL AND next_attempt_at >= \(from) AND next_attempt_at <= \(to)
                        AND \(raw: DueOrders.condition(kind))
                    """))
            }
        }
    }

    // MARK: - Waiting orders

    public func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult] {
        try write { connection in
            let transaction = StoreTransaction(connection)
            // Orders another node is expiring (or taking new proof in for) are skipped.
            let waiting = try transaction.records(
                """
                \(OrderColumns.select()) WHERE o.state = 'waiting' AND o.received_at < \(cutoff)
                ORDER BY o.received_at LIMIT \(limit) \(.forUpdateOfSkipLocked("o"))
                """)
            return try waiting.map { record in
                try transaction.planAndWrite("expiry of order \(record.orderID)") {
                    let decided = WaitingRules.expire(record, now: now)
                    return (decided.plan, decided.result)
                }.outcome
            }
        }
    }

    public func promoteWaiting(usableBy verifiers: ConfiguredVerifiers, now: Date) throws -> Int {
        // Only orders with some proof can be promoted: the rule decides which proof counts.
        try write { connection in
            let transaction = StoreTransaction(connection)
            let waiting = try transaction.records(
                """
                \(OrderColumns.select())
                WHERE o.state = 'waiting' AND (p.receipt IS NOT NULL OR o.transaction_id IS NOT NULL OR p.signed_transaction IS NOT NULL
                    OR o.purchase_token IS NOT NULL)
                ORDER BY o.id \(.forUpdateOf("o"))
                """)
            var promoted = 0
            for record in waiting {
                let (_, written) = try transaction.planAndWrite("promotion of order \(record.orderID)") {
                    (WaitingRules.promote(record, usableBy: verifiers, now: now), ())
                }
                if written != nil { promoted += 1 }
            }
            return promoted
        }
    }
}
