import Foundation
import ReconcileCore

/// Orders per transaction in ``RelationalOrderStore/applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)``.
public enum OperatorBatch {
    /// A thousand orders: an action on 150,000 orders never holds the store for long.
    public static let size = 1_000
}

/// Operator actions (DESIGN §4) under ``OperatorRules``: the orders are locked first (on a
/// shared store), so that the same action asked of two nodes at once applies once — the second
/// finds the order already moved, and the rules answer for that state.
extension RelationalOrderStore {
    public func apply(_ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date) throws -> [OperatorOutcome] {
        try write { connection in
            let transaction = StoreTransaction(connection)
            let orderIDs: [String]
            var records: [String: OrderRecord]
            switch request.target {
            case .orders(let ids):
                orderIDs = ids
                records = try transaction.records(orderIDs: ids)
            case .state(let state):
                // Locking re-reads each row: one another node moved out of `state` meanwhile is
                // left out.
                let found = try transaction.records(
                    "\(OrderColumns.select()) WHERE o.state = \(state.rawValue) ORDER BY o.id \(.forUpdateOf("o"))")
                records = Dictionary(found.map { ($0.orderID, $0) }, uniquingKeysWith: { first, _ in first })
                orderIDs = found.sorted { ($0.receivedAt, $0.reference) < ($1.receivedAt, $1.reference) }.map(\.orderID)
            }
            // Every node wakes for what the action made due (when this transaction commits).
            if !orderIDs.isEmpty { try wakeNodes(connection) }
            return try orderIDs.map { orderID in
                try operate(orderID, request, record: &records, verifiers: verifiers, now: now, in: transaction)
            }
        }
    }

    /// One order's action: plan (``OperatorRules``), write; the same order named twice sees the
    /// first action's result.
    private func operate(
        _ orderID: String, _ request: OperatorRequest, record records: inout [String: OrderRecord], verifiers: ConfiguredVerifiers?,
        now: Date, in transaction: StoreTransaction<Connection>
    ) throws -> OperatorOutcome {
        let (outcome, written) = try transaction.planAndWrite("\(request.action.rawValue) of order \(orderID)") {
            let decided = try OperatorRules.plan(request, on: records[orderID], orderID: orderID, verifiers: verifiers, now: now, lookups: transaction)
            return (decided.plan, decided.outcome)
        }
        if let written {
            records[orderID] = written.record
            // `resolve --transaction-id` claims: a refund that came first applies now.
            _ = try transaction.applyUnmatchedNotifications(about: written.takenTransactions, now: now)
        }
        return outcome
    }

    /// Applies an operator action in batches of `batchSize` orders, one transaction each, so
    /// that an action on 150,000 orders never holds the store for long: the scheduler's
    /// commits, its watchdog pings and other requests get their turn between two batches.
    ///
    /// For a `.state` target the orders are those in the state when the action begins, in the
    /// order they were taken in; one that has left the state before its batch comes is skipped.
    /// `shouldStop` is asked before each batch; when it says so, the outcome is `interrupted`
    /// and counts the orders not reached. `each` sees every outcome, after its batch committed.
    public func applyInBatches(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: () -> Date, batchSize: Int, sampleSize: Int,
        shouldStop: () -> Bool, each: (OperatorOutcome) -> Void
    ) throws -> BulkOutcome {
        let named: [String]?
        let rows: [Int64]
        var state: OrderState?
        switch request.target {
        case .orders(let ids):
            named = ids
            rows = []
        case .state(let wanted):
            named = nil
            state = wanted
            rows = try withConnection { connection in
                try connection.fetchAll(
                    "SELECT id FROM orders \(.indexedBy("orders_state_received")) WHERE state = \(wanted.rawValue) ORDER BY received_at, id"
                ) { $0.int64(0) }
            }
        }
        let count = named?.count ?? rows.count
        var outcome = BulkOutcome(matched: count)
        var start = 0
        while start < count {
            if shouldStop() {
                outcome.interrupted = true
                outcome.notReached = count - start
                break
            }
            let end = min(start + batchSize, count)
            let time = now()
            let outcomes: [OperatorOutcome]
            if let named {
                var batch = request
                batch.target = .orders(Array(named[start..<end]))
                outcomes = try apply(batch, verifiers: verifiers, now: time)
            } else {
                let batchRows = Array(rows[start..<end])
                outcomes = try write { connection in
                    let transaction = StoreTransaction(connection)
                    let still = try transaction.records(
                        """
                        \(OrderColumns.select()) WHERE o.id \(in: batchRows) AND o.state = \(state!.rawValue)
                        ORDER BY o.id \(.forUpdateOf("o"))
                        """)
                    var records = Dictionary(still.map { ($0.orderID, $0) }, uniquingKeysWith: { first, _ in first })
                    let byRow = Dictionary(still.map { ($0.reference, $0.orderID) }, uniquingKeysWith: { first, _ in first })
                    if !still.isEmpty { try wakeNodes(connection) }
                    return try batchRows.compactMap { row -> OperatorOutcome? in
                        guard let orderID = byRow[row] else { return nil }
                        return try operate(orderID, request, record: &records, verifiers: verifiers, now: time, in: transaction)
                    }
                }
                outcome.skipped += batchRows.count - outcomes.count
            }
            for result in outcomes {
                outcome.add(result, sampleSize: sampleSize)
                each(result)
            }
            start = end
        }
        return outcome
    }
}
