import Foundation

/// What the scheduler and `reconcilectl` need of a store's outbox (DESIGN §5a): actions leased
/// by endpoint like orders, completed under their lease, listed per order and when due, and
/// counted. Every method is one transaction.
public protocol OutboxStore: Sendable {
    /// Leases up to `limit` pending actions of `endpoint` due at `now`, earliest first, with what
    /// their requests need from their orders; counts the attempt when `charge`.
    func claimActions(endpoint: VerificationEndpoint, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws
        -> [ClaimedAction]

    /// The earliest next attempt of a pending action of `endpoint`, or `nil`.
    func nextActionDueTime(endpoint: VerificationEndpoint) throws -> Date?

    /// Applies attempt completions under their leases (``OutboxRules``), in one transaction.
    func completeActions(_ completions: [OutboxCompletion], owner: String, now: Date) throws -> [OutboxResult]

    /// An order's actions, oldest first.
    func actions(orderID: String) throws -> [OutboxAction]

    /// Pending actions, soonest next attempt first (in flight ones last); only those due by
    /// `dueBy` when it is set.
    func pendingActions(dueBy: Date?, limit: Int) throws -> [OutboxAction]

    /// The backlog: pending and escalated actions, the oldest pending one, the next due time.
    func outboxSummary() throws -> OutboxSummary
}
