/// An outbox action the scheduler has leased to send, with what the request needs from its
/// order as the order is now (the purchase token is read here, at send time; never stored in
/// the action).
public struct ClaimedAction: Sendable, Hashable {
    /// The action after the claim (its attempt counted when charged).
    public var action: OutboxAction
    public var productID: String
    /// The order's proof (purchase token, package name); `nil` fields when it was pruned.
    public var proof: OrderProof
    /// Whether this attempt counts against `MaxAttempts` (a circuit's probe does not).
    public var charged: Bool

    public init(action: OutboxAction, productID: String, proof: OrderProof, charged: Bool = true) {
        self.action = action
        self.productID = productID
        self.proof = proof
        self.charged = charged
    }
}
