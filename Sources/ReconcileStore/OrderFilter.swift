import Foundation
import ReconcileCore

/// Which orders `reconcilectl list` shows.
public struct OrderFilter: Sendable, Hashable {
    /// Any of these states (all states when empty).
    public var states: [OrderState]
    public var productID: String?
    /// Only orders whose last reason is this code (`--reason`).
    public var reason: String?
    /// Taken in before this time (`--older-than`).
    public var receivedBefore: Date?
    /// Only orders of this store (`--store`).
    public var store: PurchaseStore?
    /// Only orders whose id starts with this (shell completion).
    public var orderIDPrefix: String?
    public var limit: Int

    public init(states: [OrderState] = [], productID: String? = nil, reason: String? = nil, receivedBefore: Date? = nil, store: PurchaseStore? = nil, orderIDPrefix: String? = nil, limit: Int = 100) {
        self.states = states
        self.productID = productID
        self.reason = reason
        self.receivedBefore = receivedBefore
        self.store = store
        self.orderIDPrefix = orderIDPrefix
        self.limit = limit
    }
}
