/// A plan that lost a race for a unique key to another transaction, found while writing it
/// (`INSERT … ON CONFLICT DO NOTHING` inserted nothing): nothing of the plan was written. On a
/// shared store the store asks the rule again, which now sees the winner; on SQLite, whose one
/// writer makes the race impossible, it fails the transaction.
package enum PlanConflict: Error, Hashable, CustomStringConvertible {
    /// Another node inserted an order with this id since it was looked up.
    case orderExists(String)
    /// Another order holds the claim on this transaction id.
    case transactionClaimed(String)

    package var description: String {
        switch self {
        case .orderExists(let orderID): "order \(orderID) was inserted by another writer meanwhile"
        case .transactionClaimed: "another order claimed the same transaction meanwhile"
        }
    }
}
