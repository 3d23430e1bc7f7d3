import Foundation

/// An operator's action on orders (DESIGN §4, §10), as `reconcilectl` or the control socket asks
/// for it.
public struct OperatorRequest: Sendable, Hashable {
    /// Which orders.
    public enum Target: Sendable, Hashable {
        case orders([String])
        /// Every order in this state (`retry --state escalated`).
        case state(OrderState)
    }

    public var action: OperatorAction
    public var target: Target
    /// `operator:<name>`.
    public var actor: TransitionActor
    public var note: String?
    /// `retry --reset-attempts`: attempts to zero and the age clock restarted.
    public var resetAttempts: Bool
    /// `retry --force`: needed to retry a `duplicate_transaction` escalation.
    public var force: Bool
    /// `resolve --transaction-id`: claim this transaction for the order.
    public var transactionID: String?

    public init(
        action: OperatorAction, target: Target, actor: TransitionActor, note: String? = nil, resetAttempts: Bool = false,
        force: Bool = false, transactionID: String? = nil
    ) {
        self.action = action
        self.target = target
        self.actor = actor
        self.note = note
        self.resetAttempts = resetAttempts
        self.force = force
        self.transactionID = transactionID
    }
}

/// What an operator action did to one order.
public struct OperatorOutcome: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// Applied: the order moved (or, for a retry of a pending order, became due now).
        case applied(from: OrderState, to: OrderState)
        /// The order's attempt is in flight: the action is applied when it ends.
        case deferred(state: OrderState)
        /// Refused, with the reason (the order's current state named).
        case refused(String)
        case notFound
    }

    public var orderID: String
    public var result: Result

    public init(orderID: String, result: Result) {
        self.orderID = orderID
        self.result = result
    }

    public var changed: Bool {
        switch result {
        case .applied, .deferred: true
        case .refused, .notFound: false
        }
    }
}
