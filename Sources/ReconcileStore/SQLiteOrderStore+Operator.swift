import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// Applies an operator action; `verifiers` decide whether a retried order has usable proof
    /// (`nil`: any proof counts).
    public func apply(_ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date) throws -> [OperatorOutcome] {
        try write { connection in
            let orderIDs: [String]
            switch request.target {
            case .orders(let ids):
                orderIDs = ids
            case .state(let state):
                orderIDs = try connection.query(
                    "SELECT order_id FROM orders WHERE state = ? ORDER BY received_at", [.text(state.rawValue)]
                ) { $0.string(0) }
            }
            return try orderIDs.map { orderID in
                try Self.operate(orderID, request, verifiers: verifiers, now: now, connection: connection)
            }
        }
    }

    /// Orders per transaction in ``applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)``.
    public static let operatorBatchSize = 1_000

    /// Applies an operator action in batches of `batchSize` orders, one transaction each, so
    /// that an action on 150,000 orders never holds the store for long: the scheduler's
    /// commits, its watchdog pings and other requests get their turn between two batches.
    ///
    /// For a `.state` target the orders are those in the state when the action begins, in the
    /// order they were taken in; one that has left the state before its batch comes is skipped.
    /// `shouldStop` is asked before each batch; when it says so, the outcome is `interrupted`
    /// and counts the orders not reached. `each` sees every outcome, after its batch committed.
    public func applyInBatches(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: () -> Date = Date.init,
        batchSize: Int = SQLiteOrderStore.operatorBatchSize, sampleSize: Int = 100,
        shouldStop: () -> Bool = { false }, each: (OperatorOutcome) -> Void = { _ in }
    ) throws -> BulkOutcome {
        enum Target {
            case named([String])
            case rows([Int64], OrderState)
        }
        let target: Target
        let count: Int
        switch request.target {
        case .orders(let ids):
            target = .named(ids)
            count = ids.count
        case .state(let state):
            let rows = try withConnection { connection in
                try connection.query(
                    "SELECT id FROM orders INDEXED BY orders_state_received WHERE state = ? ORDER BY received_at, id", [.text(state.rawValue)]
                ) { $0.int64(0) }
            }
            target = .rows(rows, state)
            count = rows.count
        }
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
            let batch = try write { connection -> (outcomes: [OperatorOutcome], skipped: Int) in
                switch target {
                case .named(let ids):
                    return (try ids[start..<end].map { try Self.operate($0, request, verifiers: verifiers, now: time, connection: connection) }, 0)
                case .rows(let rows, let state):
                    var outcomes: [OperatorOutcome] = []
                    var skipped = 0
                    for row in rows[start..<end] {
                        guard let orderID = try connection.queryFirst(
                            "SELECT order_id FROM orders WHERE id = ? AND state = ?", [.integer(row), .text(state.rawValue)], { $0.string(0) })
                        else {
                            skipped += 1
                            continue
                        }
                        outcomes.append(try Self.operate(orderID, request, verifiers: verifiers, now: time, connection: connection))
                    }
                    return (outcomes, skipped)
                }
            }
            outcome.skipped += batch.skipped
            for result in batch.outcomes {
                outcome.add(result, sampleSize: sampleSize)
                each(result)
            }
            start = end
        }
        return outcome
    }

    /// One order's action inside the caller's transaction: read, plan (``OperatorRules``), write.
    static func operate(
        _ orderID: String, _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date, connection: SQLiteConnection
    ) throws -> OperatorOutcome {
        let record = try record(orderID: orderID, connection: connection)
        let (plan, outcome) = try OperatorRules.plan(
            request, on: record, orderID: orderID, verifiers: verifiers, now: now, lookups: SQLiteRuleLookups(connection: connection))
        if let plan {
            try write(plan, connection: connection)
            // `resolve --transaction-id` claims: a refund that came first applies now.
            _ = try applyUnmatchedNotifications(about: plan.takenTransactions, now: now, connection: connection)
        }
        return outcome
    }
}

extension SQLiteOrderStore {
    /// ``applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)`` with `[Verifier] Kind=kind` only.
    public func applyInBatches(
        _ request: OperatorRequest, verifierKind: VerifierKind?, now: () -> Date = Date.init,
        batchSize: Int = SQLiteOrderStore.operatorBatchSize, sampleSize: Int = 100,
        shouldStop: () -> Bool = { false }, each: (OperatorOutcome) -> Void = { _ in }
    ) throws -> BulkOutcome {
        try applyInBatches(
            request, verifiers: verifierKind.map { ConfiguredVerifiers(kind: $0) }, now: now, batchSize: batchSize, sampleSize: sampleSize,
            shouldStop: shouldStop, each: each)
    }
}
