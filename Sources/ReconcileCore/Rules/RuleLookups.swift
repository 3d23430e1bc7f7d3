import Foundation

/// What a rule may need to read besides the order itself, inside the store's transaction: who
/// holds the claims on transaction ids, and the history. Stores answer from their tables; tests
/// from a dictionary.
public protocol RuleLookups {
    /// The order id holding each claimed transaction id among `transactionIDs` (unclaimed ones
    /// are absent).
    func claimants(of transactionIDs: [String]) throws -> [String: String]

    /// The detail of the order's latest transition with this reason code, if any.
    func latestDetail(orderReference: Int64, reason: String) throws -> String?

    /// The order's escalated outbox actions, oldest first (locked for the transaction where the
    /// store can: the rule writes them back).
    func escalatedActions(orderReference: Int64) throws -> [OutboxAction]

    /// Whether a refund reversal for `transactionID`, signed by the store after `date`, was taken
    /// in already (it came first: a refund it reverses changes nothing then).
    func reversalTaken(transactionID: String, signedAfter date: Date) throws -> Bool

    /// The idempotency keys of the order's outbox actions of `kind`.
    func actionKeys(orderReference: Int64, kind: OutboxKind) throws -> [String]
}
