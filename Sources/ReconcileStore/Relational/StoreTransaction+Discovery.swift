import Foundation
import ReconcileCore

/// Purchases the phone never sent inside a transaction (DESIGN §5b): kept once by their
/// transaction key, matched to the order that holds their transaction, their status written as
/// ``DiscoveryRules`` decides.
extension StoreTransaction {
    /// Keeps one reported purchase as ``DiscoveryRules/arrive(_:holder:known:settings:now:)``
    /// says, unless it is known already.
    package func recordDiscovered(_ purchase: DiscoveredPurchase, settings: DiscoverySettings, now: Date) throws -> DiscoveryArrival {
        guard settings.mode != .off else { return .ignored }
        if let known = try discovered(transactionKey: purchase.transactionKey) { return .known(known.status) }
        let holder = try holder(of: purchase)
        guard let status = DiscoveryRules.arrive(purchase, holder: holder?.orderID, known: nil, settings: settings, now: now) else {
            return .ignored
        }
        guard try insertDiscovered(purchase, status: status, holder: holder?.reference, now: now) != nil else {
            // Another node kept it meanwhile (its commit came first).
            return try discovered(transactionKey: purchase.transactionKey).map { .known($0.status) } ?? .ignored
        }
        return .recorded(status)
    }

    /// The order holding `purchase`'s transaction: the one that claimed its key, else one not
    /// verified yet that carries its App Store transaction id or its purchase token.
    package func holder(of purchase: DiscoveredPurchase) throws -> (reference: Int64, orderID: String)? {
        let order = { (row: Connection.Row) in (reference: row.int64(0), orderID: row.string(1)) }
        if let claimed = try connection.fetchOne(
            "SELECT o.id, o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = \(purchase.transactionKey)", order)
        {
            return claimed
        }
        let carried: SQLStatement
        if let token = purchase.proof.purchaseToken {
            carried = "SELECT id, order_id FROM orders WHERE purchase_token = \(token) ORDER BY id LIMIT 1"
        } else if purchase.store == .appStore {
            carried = "SELECT id, order_id FROM orders WHERE transaction_id = \(purchase.transactionKey) ORDER BY id LIMIT 1"
        } else {
            return nil
        }
        return try connection.fetchOne(carried, order)
    }

    /// Keeps `purchase` once by its transaction key; `nil` when it is kept already (by this node
    /// or another).
    package func insertDiscovered(_ purchase: DiscoveredPurchase, status: DiscoveryRules.Status, holder: Int64?, now: Date) throws -> Int64? {
        try connection.fetchOne(
            """
            INSERT INTO discovered_purchases (\(raw: DiscoveredPurchaseColumns.insert.joined(separator: ", ")))
            VALUES (\(SQLStatement.list(DiscoveredPurchaseColumns.insertValues(purchase, status: status, holder: holder, now: now))))
            ON CONFLICT (transaction_key) DO NOTHING RETURNING id
            """
        ) { $0.int64(0) }
    }

    /// The purchases `statement` selects (``DiscoveredPurchaseColumns/select``).
    package func discovered(_ statement: SQLStatement) throws -> [StoredDiscoveredPurchase] {
        try connection.fetchAll(statement, DiscoveredPurchaseColumns.stored(from:))
    }

    /// The purchase kept under `transactionKey`, if any; locked on a shared store unless
    /// `locking` is false (a read).
    package func discovered(transactionKey: String, locking: Bool = true) throws -> StoredDiscoveredPurchase? {
        let lock: SQLStatement = locking ? "\(SQLClause.forUpdateOf("d"))" : ""
        return try connection.fetchOne(
            """
            SELECT \(raw: DiscoveredPurchaseColumns.select) \(raw: DiscoveredPurchaseColumns.from)
            WHERE d.transaction_key = \(transactionKey) \(lock)
            """, DiscoveredPurchaseColumns.stored(from:))
    }

    /// Writes where a kept purchase stands now, and the order that holds it.
    package func updateDiscovered(_ reference: Int64, status: DiscoveryRules.Status, orderReference: Int64?, now: Date) throws {
        try connection.perform(
            """
            UPDATE discovered_purchases SET status = \(status.code), grace_until = \(DiscoveredPurchaseColumns.graceEnd(status)),
                order_ref = \(orderReference), updated_at = \(now)
            WHERE id = \(reference)
            """)
    }

    /// Keeps a recovered purchase as discovered, `became_order`, held by the order made for it.
    package func keepRecovered(_ found: LookedUpPurchase, known: StoredDiscoveredPurchase?, orderID: String, orderReference: Int64, now: Date) throws {
        let status = DiscoveryRules.Status.becameOrder(orderID: orderID)
        if let known {
            try updateDiscovered(known.reference, status: status, orderReference: orderReference, now: now)
        } else {
            _ = try insertDiscovered(found.purchase, status: status, holder: orderReference, now: now)
        }
    }

    /// What taking in an order a purchase becomes did: the order of that id stored before, if
    /// any, and what was written.
    package struct MadeOrder {
        package var orderID: String
        package var outcome: IngestOutcome
        package var existing: OrderRecord?
        package var written: OrderPlan?

        /// The order holding the purchase now: the one just written, or the one stored before.
        package var reference: Int64? { written?.record.reference ?? existing?.reference }
    }

    /// Takes in the order a discovered purchase becomes (`order`), like a spool file.
    package func takeIn(_ order: DiscoveryRules.DiscoveredOrder, verifiers: ConfiguredVerifiers, now: Date, digest: ([UInt8]) -> String) throws -> MadeOrder {
        let candidate = order.candidate(digest: digest)
        let orderID = candidate.submission.orderID
        var existing: OrderRecord?
        let (outcome, written) = try planAndWrite("\(order.origin == .store ? "discovered" : "recovered") order \(orderID)") {
            existing = try record(orderID: orderID)
            let decided = IngestRules.plan(candidate, existing: existing, verifiers: verifiers, now: now)
            return (decided.plan, decided.outcome)
        }
        return MadeOrder(orderID: orderID, outcome: outcome, existing: existing, written: written)
    }
}
