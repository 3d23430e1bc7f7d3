import Foundation

/// What a rule may need to read besides the order itself, inside the store's transaction: who
/// holds the claims on transaction ids, and the history. Stores answer from their tables; tests
/// from a dictionary.
public protocol RuleLookups {
    /// The order id holding each claimed transaction id among `transactionIDs` (unclaimed ones
    /// are absent).
    func claimants(of transactionIDs: [String]) throws -> [String: String]

    /// The order each purchase among `transactionKeys` became after a store reported it
    /// (``DiscoveryRules/Status/becameOrder(orderID:)``); purchases that became none are absent.
    func discoveredOrders(of transactionKeys: [String]) throws -> [String: String]

    /// The detail of the order's latest transition with this reason code, if any.
    func latestDetail(orderReference: Int64, reason: ReasonCode) throws -> String?

    /// The order's escalated outbox actions, oldest first (locked for the transaction where the
    /// store can: the rule writes them back).
    func escalatedActions(orderReference: Int64) throws -> [OutboxAction]

    /// The type of the latest store event about `transactionID` (a refund, revocation,
    /// reversal or voided purchase, matched as ``NotificationMatching`` matches) that the store
    /// signed after `date` and that was taken in already, if any: the latest store event about a
    /// transaction decides, so an earlier one arriving late changes nothing.
    func laterStoreEvent(transactionID: String, signedAfter date: Date) throws -> String?

    /// The order's revocation notices (``OutboxKind/revocationNotice``), oldest first (locked for
    /// the transaction where the store can: the rule may supersede them).
    func revocationNotices(orderReference: Int64) throws -> [OutboxAction]

    /// Whether any delivery request was ever sent for the order (recorded in its history, or
    /// charged): the merchant may have granted it.
    func deliveryRequested(orderReference: Int64) throws -> Bool
}
