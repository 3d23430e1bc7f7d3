/// A plan that lost a race for a unique key to another transaction, found while writing it
/// (`INSERT … ON CONFLICT DO NOTHING` inserted nothing): nothing of the plan was written, and the
/// store asks the rule again, which now sees the winner.
enum PostgreSQLPlanConflict: Error, Hashable {
    /// Another node inserted an order with this id since it was looked up.
    case orderExists(String)
    /// Another order holds the claim on this transaction id.
    case transactionClaimed(String)
}
