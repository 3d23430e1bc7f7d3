import Foundation

/// The end of one attempt, as the scheduler hands it to the store: the requests that were sent
/// and what they decided. The store applies it under the lease, in one transaction with others.
public struct AttemptCompletion: Sendable, Hashable {
    public var order: ClaimedOrder
    /// The requests sent, in order (none when nothing could be sent).
    public var records: [AttemptRecord]
    public var resolution: Resolution
    /// Whether the attempt counts: false for a circuit probe and for configuration errors
    /// (DESIGN §6: an outage or our own mistake charges no order).
    public var charged: Bool
    /// What a Google Play order that finishes owes Google (the settings in force now).
    public var playFollowUp: PlayFollowUp

    public init(
        order: ClaimedOrder, records: [AttemptRecord], resolution: Resolution, charged: Bool, playFollowUp: PlayFollowUp = PlayFollowUp()
    ) {
        self.order = order
        self.records = records
        self.resolution = resolution
        self.charged = charged
        self.playFollowUp = playFollowUp
    }

    /// What the attempt decided.
    public enum Resolution: Sendable, Hashable {
        /// Try again at `at` (verifying → pending, verified stays verified).
        case retry(at: Date, reason: Reason, malformed: Bool = false)
        /// Refused for good (verifying → rejected).
        case reject(Reason)
        /// Needs a person; `limits` for MaxAttempts/MaxAge, otherwise an outcome of §5.
        case escalate(Reason, limits: Bool = false)
        /// Granted by the verifier; finished at once, or on to delivery.
        case verified(Grant, finishes: Bool, finishedBy: Finisher)
        /// Apple answered `status 0`: match the order against these items inside the
        /// transaction (claims are checked and taken there), then verified or a §5 outcome.
        case match(items: [AppleReceiptItem], environment: String?, finishes: Bool)
        /// Google Play says the purchase is paid: claim it inside the transaction, then
        /// verified (or a duplicate).
        case playMatch(PlayMatch, finishes: Bool)
        /// The delivery endpoint acknowledged the grant.
        case delivered
        /// No delivery URL is configured (any more): the verified order finishes as verified,
        /// nothing sent (DESIGN §5).
        case finishedWithoutDelivery
    }
}

/// What applying a completion did, for logs and the escalation command.
public struct CompletionResult: Sendable, Hashable {
    public var orderID: String
    public var productID: String
    public var from: OrderState
    public var to: OrderState
    public var reason: Reason
    public var attempts: Int
    public var transactionID: String?
    public var nextAttemptAt: Date?
    /// False when the lease was gone (the completion was not applied).
    public var applied: Bool
    /// An operator's action that waited for this attempt and was applied after it: `to` is then
    /// where the operator put the order, not where the answer alone would have.
    public var appliedAction: OperatorAction?
    /// Who asked for `appliedAction`.
    public var appliedBy: TransitionActor?

    public init(
        orderID: String, productID: String, from: OrderState, to: OrderState, reason: Reason, attempts: Int, transactionID: String? = nil, nextAttemptAt: Date? = nil, applied: Bool = true
    ) {
        self.orderID = orderID
        self.productID = productID
        self.from = from
        self.to = to
        self.reason = reason
        self.attempts = attempts
        self.transactionID = transactionID
        self.nextAttemptAt = nextAttemptAt
        self.applied = applied
    }
}
