import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// Applies an operator action; `verifierKind` decides whether a retried order has usable
    /// proof (`nil`: any proof counts).
    public func apply(_ request: OperatorRequest, verifierKind: VerifierKind?, now: Date) throws -> [OperatorOutcome] {
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
                try Self.operate(orderID, request, verifierKind: verifierKind, now: now, connection: connection)
            }
        }
    }

    /// One order's action inside the caller's transaction: read, plan (``OperatorRules``), write.
    static func operate(
        _ orderID: String, _ request: OperatorRequest, verifierKind: VerifierKind?, now: Date, connection: SQLiteConnection
    ) throws -> OperatorOutcome {
        let record = try record(orderID: orderID, connection: connection)
        let (plan, outcome) = try OperatorRules.plan(
            request, on: record, orderID: orderID, verifierKind: verifierKind, now: now, lookups: SQLiteRuleLookups(connection: connection))
        if let plan { try write(plan, connection: connection) }
        return outcome
    }
}
