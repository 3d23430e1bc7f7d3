import Foundation
import ReconcileCore
import ReconcileFoundation

/// One transaction of the relational store, on either engine: it reads rows as the core's
/// records, asks the rules, and writes the plans they return, deciding nothing itself. On
/// PostgreSQL the rows it reads for a change are locked (`FOR UPDATE`, in key order, so that two
/// nodes locking overlapping sets wait instead of deadlocking); SQLite has one writer at a time,
/// and the lock clauses render as nothing there.
///
/// It also answers the rules' lookups (``RuleLookups``): each a statement of its own, so under
/// PostgreSQL's `READ COMMITTED` it sees what other nodes committed up to then.
package struct StoreTransaction<Connection: RelationalConnection>: RuleLookups {
    package let connection: Connection
    /// The orders as this transaction last read or wrote them: a plan's update then writes only
    /// the columns its rule changed, so that the database touches only the indexes on those.
    private let known = KnownRecords()

    package init(_ connection: Connection) {
        self.connection = connection
    }

    /// Whether other writers share the store (PostgreSQL): rows are locked, unique keys can be
    /// lost to another node, and a lost race is planned again.
    package var isShared: Bool { connection.dialect.locksRows }

    // MARK: - Reading records

    /// Orders selected by `statement` (which starts with ``OrderColumns/select(indexedBy:)``).
    package func records(_ statement: SQLStatement) throws -> [OrderRecord] {
        let found = try connection.fetchAll(statement, OrderColumns.record(from:))
        for record in found { known.records[record.reference] = record }
        return found
    }

    /// The order with this id, locked until the transaction ends.
    package func record(orderID: String) throws -> OrderRecord? {
        try remember(connection.fetchOne(StoreStatements.recordByOrderID([.text(orderID)]), OrderColumns.record(from:)))
    }

    /// The order with this key, locked until the transaction ends.
    package func record(reference: Int64) throws -> OrderRecord? {
        try remember(connection.fetchOne(StoreStatements.recordByID([.integer(reference)]), OrderColumns.record(from:)))
    }

    private func remember(_ record: OrderRecord?) -> OrderRecord? {
        if let record { known.records[record.reference] = record }
        return record
    }

    /// The orders with these ids, locked in key order whatever the order of `orderIDs`.
    package func records(orderIDs: [String]) throws -> [String: OrderRecord] {
        guard !orderIDs.isEmpty else { return [:] }
        let found = try records(StoreStatements.recordsByOrderID([.textList(orderIDs)]))
        return Dictionary(found.map { ($0.orderID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The orders with these keys, locked in key order.
    package func records(references: [Int64]) throws -> [Int64: OrderRecord] {
        guard !references.isEmpty else { return [:] }
        let found = try records(StoreStatements.recordsByID([.integerList(references)]))
        return Dictionary(found.map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: - Writing plans

    /// Asks a rule for a plan and writes it. On a shared store, when the write lost a race for
    /// the order id (another node inserted the order since the rule looked), asks the rule
    /// again: it now sees the winner. (A claim lost to another node fails the whole transaction
    /// at commit, and the store runs it again: see ``writeRows(_:reference:inserted:)``.)
    ///
    /// - Returns: the rule's outcome, and the plan as written (`nil` when the rule wrote nothing).
    package func planAndWrite<Outcome>(
        _ what: @autoclosure () -> String, _ rule: () throws -> (OrderPlan?, Outcome)
    ) throws -> (outcome: Outcome, written: OrderPlan?) {
        for _ in 0..<8 {
            let (plan, outcome) = try rule()
            guard let plan else { return (outcome, nil) }
            do {
                var written = plan
                written.record.reference = try write(plan)
                return (outcome, written)
            } catch is PlanConflict where isShared {
                continue
            }
        }
        throw StoreError.persistentConflict(what())
    }

    /// Writes a plan: the order (inserted when its reference is 0), the attempt's requests, the
    /// claims, the history rows and the outbox actions, exactly as planned.
    ///
    /// - Returns: the order's reference.
    /// - Throws: ``PlanConflict`` (nothing written) when another transaction holds the order id,
    ///   or (in-process store) one of the claims.
    @discardableResult
    package func write(_ plan: OrderPlan) throws -> Int64 {
        let record = plan.record
        let reference = record.reference
        if reference == 0 {
            // On a shared store: waits for a node inserting the same order id to commit or roll
            // back; then inserts nothing if it committed.
            guard let inserted = try connection.fetchOne(Self.insertStatement(record), { $0.int64(0) })
            else { throw PlanConflict.orderExists(record.orderID) }
            try writeRows(plan, reference: inserted, inserted: true)
            return inserted
        }
        try writeRows(plan, reference: reference, inserted: false)
        return reference
    }

    /// Writes the plans of new orders (reference 0, no claims: ingest's) with their rows
    /// inserted by one statement each, all sent at once (one round trip on PostgreSQL), then the
    /// rest of each plan.
    ///
    /// - Returns: each order's reference, or `nil` when another transaction holds its order id
    ///   (nothing of that plan written; the caller plans it again).
    package func writeNew(_ plans: [OrderPlan]) throws -> [Int64?] {
        precondition(plans.allSatisfy { $0.record.reference == 0 && $0.claims.isEmpty }, "only new orders without claims")
        let references = try connection.fetchEach(plans.map { Self.insertStatement($0.record) }) { $0.int64(0) }
        for (plan, reference) in zip(plans, references) {
            if let reference { try writeRows(plan, reference: reference, inserted: true) }
        }
        return references
    }

    /// The insert of a new order's row (returning its key; nothing when the order id is taken).
    private static func insertStatement(_ record: OrderRecord) -> SQLStatement {
        StoreStatements.insertOrder([.text(record.orderID), .text(record.productID)] + OrderColumns.planValues(record))
    }

    /// Everything of a plan but the new order's row: its changed columns, the attempt's
    /// requests, the claims, the history rows, the outbox actions, and last its proof (new order,
    /// or new proof taken in) — last, so that on PostgreSQL the next order's history rows can
    /// join this one's in one statement (``SQLBatch``).
    private func writeRows(_ plan: OrderPlan, reference: Int64, inserted: Bool) throws {
        let record = plan.record
        let before = known.records[reference]
        if !inserted, plan.changesRecord {
            let changed = before.map { OrderColumns.changed(OrderColumns.plan, from: $0, to: record) } ?? OrderColumns.plan
            if !changed.isEmpty {
                let values = changed.map { OrderColumns.value(of: $0, in: record) } + [.integer(reference)]
                try connection.performLater(
                    changed.count == OrderColumns.plan.count ? StoreStatements.updateWholeOrder(values) : StoreStatements.updateOrder(changed)(values))
            }
        }
        for attempt in plan.attempts {
            let request = attempt.record
            try connection.performLater(
                StoreStatements.insertAttempt([
                    .integer(reference), .integer(attempt.number), .text(attempt.kind.recordedKind), .time(request.startedAt),
                    .text(request.endpoint.rawValue), .text(orNull: request.environment), .integer(orNull: request.httpStatus.map(Int64.init)),
                    .integer(orNull: request.verifierStatus.map(Int64.init)), .integer(request.latency.totalMilliseconds),
                    .text(request.outcome.rawValue), .text(orNull: request.detail),
                ]))
        }
        for claim in plan.claims {
            let values: [SQLValue] = [.text(claim.transactionID), .integer(reference), .time(claim.at), .text(claim.actor.description)]
            if isShared {
                // The unique key decides between two nodes claiming one transaction: the second
                // waits for the first to commit, then inserts nothing, and its check before
                // COMMIT finds the other holder: the transaction fails as a conflict and runs
                // again whole, its rules now seeing the winner. Nothing waits for an answer.
                try connection.performLater(StoreStatements.insertClaimLater(values))
                try connection.checkBeforeCommit(
                    StoreStatements.claimHeldElsewhere([.text(claim.transactionID), .integer(reference)]),
                    what: "transaction \(claim.transactionID) was claimed for another order")
                continue
            }
            let inserted = try connection.fetchOne(
                StoreStatements.insertClaim(values)) { $0.int64(0) }
            if inserted == nil {
                let holder = try connection.fetchOne(StoreStatements.claimHolder([.text(claim.transactionID)])) { $0.int64(0) }
                // A claim the order already holds is kept.
                if holder != reference { throw PlanConflict.transactionClaimed(claim.transactionID) }
            }
        }
        for transition in plan.transitions {
            let values = Self.transitionValues(
                orderReference: reference, at: transition.at, actor: transition.actor, from: transition.from, to: transition.to,
                reason: transition.reason.code, detail: transition.reason.detail)
            if transition.linksLastAttempt && !plan.attempts.isEmpty {
                // The attempt this plan wrote last: the order's highest (its row is locked).
                try connection.performLater(StoreStatements.insertLinkedTransition(values + [.integer(reference)]))
            } else {
                try connection.performLater(StoreStatements.insertTransition(values + [.null]))
            }
        }
        for action in plan.outbox {
            // The idempotency key is unique: a follow-up recorded once is never recorded again.
            try connection.performLater(StoreStatements.insertOutbox(OutboxColumns.insertValues(action, orderReference: reference)))
        }
        for action in plan.outboxUpdates { try update(action) }
        if inserted {
            try connection.performLater(
                StoreStatements.insertProof([
                    .integer(reference), .text(orNull: record.proof.receipt), .text(orNull: record.proof.signedTransaction),
                    plan.raw.map(SQLValue.bytes) ?? .null,
                ]))
        } else {
            if plan.changesRecord, before.map({ !OrderColumns.changed(OrderColumns.proof, from: $0, to: record).isEmpty }) ?? true {
                try connection.performLater(
                    StoreStatements.updateProof([
                        .integer(reference), .text(orNull: record.proof.receipt), .text(orNull: record.proof.signedTransaction),
                    ]))
            }
            if let raw = plan.raw { try connection.performLater(StoreStatements.updateRaw([.integer(reference), .bytes(raw)])) }
        }
        var written = record
        written.reference = reference
        known.records[reference] = written
    }

    /// Appends one transition to an order's history.
    package func insertTransition(
        orderReference: Int64, at: Date, actor: TransitionActor, from: OrderState?, to: OrderState, reason: ReasonCode, detail: String?,
        attemptReference: Int64?
    ) throws {
        try connection.performLater(
            StoreStatements.insertTransition(
                Self.transitionValues(orderReference: orderReference, at: at, actor: actor, from: from, to: to, reason: reason, detail: detail)
                    + [.integer(orNull: attemptReference)]))
    }

    /// A history row's values but its attempt (``StoreStatements/insertTransition``'s first seven).
    private static func transitionValues(
        orderReference: Int64, at: Date, actor: TransitionActor, from: OrderState?, to: OrderState, reason: ReasonCode, detail: String?
    ) -> [SQLValue] {
        [
            .integer(orderReference), .time(at), .text(actor.description), .text(orNull: from?.rawValue), .text(to.rawValue), .text(reason.rawValue),
            .text(orNull: detail),
        ]
    }

    /// Writes an outbox action as a rule left it.
    package func update(_ action: OutboxAction) throws {
        try connection.performLater(StoreStatements.updateOutbox(OutboxColumns.updateValues(action) + [.integer(action.reference)]))
    }

    // MARK: - Pruning

    /// Drops the proofs and raw files of up to `limit` `finished` and `cancelled` orders last
    /// changed before `cutoff` (`KeepFinished=`), oldest first; on a shared store rows another
    /// node is pruning are skipped. Rows, history, claims and purchase tokens stay.
    ///
    /// - Returns: how many orders were pruned.
    package func pruneFinished(before cutoff: Date, now: Date, limit: Int) throws -> Int {
        let pruned = try connection.fetchAll(
            """
            UPDATE orders SET pruned_at = \(now)
            WHERE id IN (
                SELECT id FROM orders
                WHERE state IN ('finished', 'cancelled') AND pruned_at IS NULL AND updated_at < \(cutoff)
                ORDER BY updated_at
                LIMIT \(limit)
                \(.forUpdateSkipLocked))
            RETURNING id
            """
        ) { $0.int64(0) }
        guard !pruned.isEmpty else { return 0 }
        try connection.perform("UPDATE order_proofs SET receipt = NULL, signed_transaction = NULL, raw = NULL WHERE order_ref \(in: pruned)")
        return pruned.count
    }

    // MARK: - Outbox actions

    /// Actions selected by `statement` (which selects ``OutboxColumns/action``).
    package func actions(_ statement: SQLStatement) throws -> [OutboxAction] {
        try connection.fetchAll(statement, OutboxColumns.action(from:))
    }

    // MARK: - RuleLookups

    package func claimants(of transactionIDs: [String]) throws -> [String: String] {
        guard !transactionIDs.isEmpty else { return [:] }
        let pairs = try connection.fetchAll(StoreStatements.claimants([.textList(Array(Set(transactionIDs)))])) { ($0.string(0), $0.string(1)) }
        return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
    }

    package func discoveredOrders(of transactionKeys: [String]) throws -> [String: String] {
        guard !transactionKeys.isEmpty else { return [:] }
        let pairs = try connection.fetchAll(StoreStatements.discoveredOrders([.textList(Array(Set(transactionKeys)))])) {
            ($0.string(0), $0.string(1))
        }
        return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
    }

    package func latestDetail(orderReference: Int64, reason: ReasonCode) throws -> String? {
        try connection.fetchOne(
            "SELECT detail FROM transitions WHERE order_ref = \(orderReference) AND reason = \(reason.rawValue) ORDER BY id DESC LIMIT 1"
        ) { $0.optionalString(0) } ?? nil
    }

    package func laterStoreEvent(transactionID: String, signedAfter date: Date) throws -> String? {
        try connection.fetchOne(
            """
            SELECT type FROM notifications \(.indexedBy("notifications_transaction"))
            WHERE \(raw: NotificationColumns.matchKey) = \(transactionID) AND type IN (\(raw: NotificationColumns.storeEventTypes))
            AND signed_at > \(date) ORDER BY signed_at DESC LIMIT 1
            """
        ) { $0.string(0) }
    }

    /// Locked for the transaction: the rule may supersede those not sent yet, and one a sender
    /// leases meanwhile is seen leased.
    package func revocationNotices(orderReference: Int64) throws -> [OutboxAction] {
        try actions(
            """
            SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from)
            WHERE x.order_ref = \(orderReference) AND x.kind = \(OutboxKind.revocationNotice.rawValue) ORDER BY x.id \(.forUpdateOf("x"))
            """)
    }

    package func deliveryRequested(orderReference: Int64) throws -> Bool {
        try connection.fetchOne("SELECT 1 FROM attempts WHERE order_ref = \(orderReference) AND kind = 'deliver' LIMIT 1") { _ in true } ?? false
    }

    /// Locked for the transaction: the rule writes them back as it decides. Only escalated ones:
    /// an action in flight is neither waited for nor locked against its sender.
    package func escalatedActions(orderReference: Int64) throws -> [OutboxAction] {
        try actions(
            """
            SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from)
            WHERE x.order_ref = \(orderReference) AND x.state = 'escalated' ORDER BY x.id \(.forUpdateOf("x"))
            """)
    }
}

/// The records a ``StoreTransaction`` has read or written, by reference.
private final class KnownRecords {
    var records: [Int64: OrderRecord] = [:]
}
