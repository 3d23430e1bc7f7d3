import Foundation
import ReconcileCore

extension PostgreSQLOrderStore {
    /// Applies an operator's action (DESIGN §4) under ``OperatorRules``, from any node: the orders
    /// are locked first, so that the same action asked of two nodes at once applies once (the
    /// second finds the order already moved, and the rules answer for that state).
    public func apply(_ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date) throws -> [OperatorOutcome] {
        try write { connection in
            var records: [String: OrderRecord]
            let orderIDs: [String]
            switch request.target {
            case .orders(let ids):
                records = try Self.records(orderIDs: ids, connection: connection)
                orderIDs = ids
            case .state(let state):
                // Locking re-reads each row: one another node moved out of `state` meanwhile is
                // left out.
                let found = try connection.query(
                    "\(Self.selectRecords) WHERE state = $1 ORDER BY id FOR UPDATE", [.text(state.rawValue)], OrderColumns.record(from:))
                records = Dictionary(found.map { ($0.orderID, $0) }, uniquingKeysWith: { first, _ in first })
                orderIDs = found.sorted { ($0.receivedAt, $0.reference) < ($1.receivedAt, $1.reference) }.map(\.orderID)
            }
            let lookups = PostgreSQLRuleLookups(connection: connection)
            // Every node wakes for what the action made due (sent when this transaction commits).
            if !orderIDs.isEmpty { try Self.notify(connection) }
            return try orderIDs.map { orderID in
                let (outcome, written) = try Self.planAndWrite("\(request.action.rawValue) of order \(orderID)", connection: connection) {
                    let decided = try OperatorRules.plan(
                        request, on: records[orderID], orderID: orderID, verifiers: verifiers, now: now, lookups: lookups)
                    return (decided.plan, decided.outcome)
                }
                // The same order named twice sees the first action's result.
                if let written {
                    records[orderID] = written.record
                    // `resolve --transaction-id` claims: a refund that came first applies now.
                    _ = try Self.applyUnmatchedNotifications(about: written.takenTransactions, now: now, connection: connection)
                }
                return outcome
            }
        }
    }
}
