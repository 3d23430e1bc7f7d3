import Foundation
import ReconcileCore
import ReconcileFoundation

/// Purchases the phone never sent (DESIGN §5b), kept once by their transaction key — the unique
/// key decides which node keeps one when two hear of it at once — and settled after their grace
/// by ``DiscoveryRules``, any order they become taken in like a spool file in the same
/// transaction.
extension RelationalOrderStore {
    public func recordDiscovered(_ purchases: [DiscoveredPurchase], settings: DiscoverySettings, now: Date) throws -> [DiscoveryArrival] {
        guard !purchases.isEmpty else { return [] }
        guard settings.mode != .off else { return purchases.map { _ in .ignored } }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            return try purchases.map { try transaction.recordDiscovered($0, settings: settings, now: now) }
        }
    }

    public func settleDiscovered(
        settings: DiscoverySettings, verifiers: ConfiguredVerifiers, now: Date, limit: Int, digest: @Sendable ([UInt8]) -> String
    ) throws -> [DiscoverySettlement] {
        // Read first: most calls find none due, and must not pay for a write transaction.
        guard let next = try nextGraceEnd(), next <= now else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            let due = try transaction.discovered(
                """
                SELECT \(raw: DiscoveredPurchaseColumns.select) \(raw: DiscoveredPurchaseColumns.from)
                WHERE d.status = 'waiting' AND d.grace_until <= \(now) ORDER BY d.grace_until, d.id LIMIT \(limit)
                \(.forUpdateOfSkipLocked("d"))
                """)
            var settled: [DiscoverySettlement] = []
            var madeOrders = false
            for stored in due {
                // Looked up again: the phone's order may have come meanwhile.
                let holder = try transaction.holder(of: stored.purchase)
                switch DiscoveryRules.graceEnded(stored.purchase, holder: holder?.orderID, settings: settings) {
                case .settles(let status):
                    try transaction.updateDiscovered(stored.reference, status: status, orderReference: holder?.reference, now: now)
                    settled.append(DiscoverySettlement(purchase: stored.purchase, status: status))
                case .becomesOrder(let order):
                    let made = try transaction.takeIn(order, verifiers: verifiers, now: now, digest: digest)
                    // An order of that id taken in before (an operator's recover) holds it too.
                    let status = DiscoveryRules.Status.becameOrder(orderID: made.orderID)
                    try transaction.updateDiscovered(stored.reference, status: status, orderReference: made.reference, now: now)
                    settled.append(DiscoverySettlement(purchase: stored.purchase, status: status, ingest: made.outcome))
                    madeOrders = madeOrders || made.written != nil
                }
            }
            if madeOrders { try wakeNodes(connection) }
            return settled
        }
    }

    public func nextGraceEnd() throws -> Date? {
        try withConnection { connection in
            try connection.fetchOne("SELECT min(grace_until) FROM discovered_purchases WHERE status = 'waiting'") {
                $0.optionalInt64(0).map(Date.init(epochMilliseconds:))
            } ?? nil
        }
    }

    public func discoveredPurchases(limit: Int) throws -> [StoredDiscoveredPurchase] {
        try withConnection { connection in
            try StoreTransaction(connection).discovered(
                """
                SELECT \(raw: DiscoveredPurchaseColumns.select) \(raw: DiscoveredPurchaseColumns.from)
                ORDER BY d.discovered_at DESC, d.id DESC LIMIT \(limit)
                """)
        }
    }

    public func holdings(of purchases: [LookedUpPurchase]) throws -> [LookedUpPurchase] {
        guard !purchases.isEmpty else { return [] }
        return try withConnection { connection in
            let transaction = StoreTransaction(connection)
            return try purchases.map { found in
                var found = found
                let known = try transaction.discovered(transactionKey: found.purchase.transactionKey, locking: false)
                found.discovered = known?.status
                found.heldBy = try transaction.holder(of: found.purchase)?.orderID ?? known?.status.orderID
                return found
            }
        }
    }

    public func recover(
        _ purchases: [LookedUpPurchase], user: String?, allowTestPurchases: Bool, verifiers: ConfiguredVerifiers, now: Date,
        digest: @Sendable ([UInt8]) -> String
    ) throws -> [RecoveredPurchase] {
        guard !purchases.isEmpty else { return [] }
        return try write { connection in
            let transaction = StoreTransaction(connection)
            var results: [RecoveredPurchase] = []
            var madeOrders = false
            for found in purchases {
                let known = try transaction.discovered(transactionKey: found.purchase.transactionKey)
                let holder = try transaction.holder(of: found.purchase)
                var shown = found
                shown.discovered = known?.status
                shown.heldBy = holder?.orderID ?? known?.status.orderID
                switch DiscoveryRules.recover(found, holder: holder?.orderID, known: known?.status, user: user, allowTestPurchases: allowTestPurchases) {
                case .leaves(let left):
                    results.append(RecoveredPurchase(found: shown, result: .left(left)))
                case .makes(let order):
                    let made = try transaction.takeIn(order, verifiers: verifiers, now: now, digest: digest)
                    if let existing = made.existing {
                        // An order of that id was taken in before: it holds the purchase.
                        try transaction.keepRecovered(found, known: known, orderID: made.orderID, orderReference: existing.reference, now: now)
                        results.append(RecoveredPurchase(found: shown, result: .left(.heldBy(orderID: made.orderID))))
                    } else if let written = made.written {
                        try transaction.keepRecovered(found, known: known, orderID: made.orderID, orderReference: written.record.reference, now: now)
                        madeOrders = true
                        results.append(RecoveredPurchase(found: shown, result: .made(orderID: made.orderID)))
                    } else {
                        let why = if case .conflict(let problem) = made.outcome { problem.description } else { "nothing was written" }
                        results.append(RecoveredPurchase(found: shown, result: .left(.refused(why))))
                    }
                }
            }
            if madeOrders { try wakeNodes(connection) }
            return results
        }
    }
}
