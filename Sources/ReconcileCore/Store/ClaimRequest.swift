import Foundation

/// What a scheduler turn wants leased: up to `limit` due orders of `kind`.
public struct ClaimRequest: Sendable, Hashable {
    public var kind: WorkKind
    public var limit: Int
    /// False for a circuit's probe: the attempt is not charged.
    public var charge: Bool
    public var leaseUntil: Date

    public init(kind: WorkKind, limit: Int, charge: Bool, leaseUntil: Date) {
        self.kind = kind
        self.limit = limit
        self.charge = charge
        self.leaseUntil = leaseUntil
    }
}

/// What one scheduler turn committed: the completions' results and the orders leased.
public struct TurnResult: Sendable, Hashable {
    public var results: [CompletionResult]
    /// Per claim request, in order.
    public var claimed: [[ClaimedOrder]]
    /// Store notifications that waited for one of these attempts, applied in the same
    /// transaction before anything was claimed (a refunded order is never leased for delivery).
    public var notifications: [NotificationRules.Outcome]

    public init(results: [CompletionResult], claimed: [[ClaimedOrder]], notifications: [NotificationRules.Outcome] = []) {
        self.results = results
        self.claimed = claimed
        self.notifications = notifications
    }
}
