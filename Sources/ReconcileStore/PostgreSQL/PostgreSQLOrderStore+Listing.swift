import Foundation
import ReconcileCore

/// What `reconcilectl` and the daemon's reports read, and bulk operator actions: the
/// ``OperableOrderStore`` side of the shared store, as SQLite's `+Listing`, `+Summary` and
/// `applyInBatches` do it.
extension PostgreSQLOrderStore: OperableOrderStore {
    public func summary() throws -> StoreSummary {
        var summary = try withConnection { connection in
            try connection.transaction {
                var counts: [OrderState: Int] = [:]
                let pairs = try connection.query("SELECT state, count(*) FROM orders GROUP BY state") { (OrderState(rawValue: $0.string(0)), $0.int(1)) }
                for (state, count) in pairs {
                    if let state { counts[state] = count }
                }
                let oldest = try StoreSummary.pendingStates.compactMap { state in
                    try connection.queryFirst(
                        "SELECT received_at FROM orders WHERE state = $1 ORDER BY received_at LIMIT 1", [.text(state.rawValue)]
                    ) { Date(epochMilliseconds: $0.int64(0)) }
                }.min()
                let next = try WorkKind.allCases.compactMap { kind in
                    try connection.queryFirst(Self.nextDueSQL(kind)) { Date(epochMilliseconds: $0.int64(0)) }
                }.min()
                let unmatched = try connection.queryFirst(StoreSummary.unmatchedNotificationsSQL) { $0.int(0) } ?? 0
                return StoreSummary(counts: counts, oldestPendingReceivedAt: oldest, nextAttemptAt: next, unmatchedNotifications: unmatched)
            }
        }
        // Its own read (the connection's lock is not reentrant): the outbox's backlog.
        summary.outbox = try outboxSummary()
        return summary
    }

    public func countsByState(in states: [OrderState]) throws -> [OrderState: Int] {
        try withConnection { connection in
            var counts: [OrderState: Int] = [:]
            let found = try connection.query(
                "SELECT state, count(*) FROM orders WHERE state = ANY($1::text[]) GROUP BY state", [.textArray(states.map(\.rawValue))]
            ) { (OrderState(rawValue: $0.string(0)), $0.int(1)) }
            for (state, count) in found { if let state { counts[state] = count } }
            return counts
        }
    }

    public func list(_ filter: OrderFilter) throws -> (orders: [StoredOrder], total: Int) {
        var conditions: [String] = []
        var parameters: [PostgreSQLValue] = []
        if !filter.states.isEmpty {
            parameters.append(.textArray(filter.states.map(\.rawValue)))
            conditions.append("state = ANY($\(parameters.count)::text[])")
        }
        if let product = filter.productID {
            parameters.append(.text(product))
            conditions.append("product_id = $\(parameters.count)")
        }
        if let before = filter.receivedBefore {
            parameters.append(.integer(before.epochMilliseconds))
            conditions.append("received_at < $\(parameters.count)")
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try withConnection { connection in
            try connection.transaction {
                let orders = try connection.query(
                    """
                    \(Self.selectRecords) \(whereClause)
                    ORDER BY next_attempt_at IS NULL, next_attempt_at, received_at, id
                    LIMIT $\(parameters.count + 1)
                    """, parameters + [.integer(Int64(filter.limit))]
                ) { OrderColumns.record(from: $0).storedOrder }
                let total = Int(try connection.scalar("SELECT count(*) FROM orders \(whereClause)", parameters) ?? 0)
                return (orders, total)
            }
        }
    }

    public func applyInBatches(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: () -> Date, batchSize: Int, sampleSize: Int,
        shouldStop: () -> Bool, each: (OperatorOutcome) -> Void
    ) throws -> BulkOutcome {
        // The orders: named, or those in the state when the action begins, in the order they
        // were taken in; one that has left the state before its batch comes is skipped.
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
                try connection.query(
                    "SELECT id FROM orders WHERE state = $1 ORDER BY received_at, id", [.text(wanted.rawValue)]) { $0.int64(0) }
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
            let outcomes: [OperatorOutcome]
            if let named {
                var batch = request
                batch.target = .orders(Array(named[start..<end]))
                outcomes = try apply(batch, verifiers: verifiers, now: now())
            } else {
                let time = now()
                let batchRows = Array(rows[start..<end])
                outcomes = try write { connection in
                    let still = try connection.query(
                        "SELECT order_id, id FROM orders WHERE id = ANY($1::bigint[]) AND state = $2 ORDER BY id FOR UPDATE",
                        [.integerArray(batchRows), .text(state!.rawValue)]) { ($0.int64(1), $0.string(0)) }
                    let ids = Dictionary(still, uniquingKeysWith: { first, _ in first })
                    let records = try Self.records(orderIDs: Array(ids.values), connection: connection)
                    let lookups = PostgreSQLRuleLookups(connection: connection)
                    if !ids.isEmpty { try Self.notify(connection) }
                    return try batchRows.compactMap { row -> OperatorOutcome? in
                        guard let orderID = ids[row] else { return nil }
                        return try Self.planAndWrite("\(request.action.rawValue) of order \(orderID)", connection: connection) {
                            let decided = try OperatorRules.plan(
                                request, on: records[orderID], orderID: orderID, verifiers: verifiers, now: time, lookups: lookups)
                            return (decided.plan, decided.outcome)
                        }.outcome
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
