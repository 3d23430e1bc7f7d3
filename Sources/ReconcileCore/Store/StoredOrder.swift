import Foundation

/// An order as the store holds it: what `reconcilectl show` prints and the scheduler works on.
public struct StoredOrder: Sendable, Hashable {
    public var orderID: String
    public var productID: String
    public var state: OrderState
    /// See ``OrderLifecycle/Context/resumeState``.
    public var resumeState: OrderState?
    public var proof: OrderProof
    public var applicationUsername: String?
    public var userID: String?
    public var amount: String?
    public var currency: String?
    public var createdAt: Date?
    public var receivedAt: Date
    public var updatedAt: Date
    /// When the order is next due; `nil` while it is not waiting for an attempt.
    public var nextAttemptAt: Date?
    /// Verification requests sent for it.
    public var attempts: Int
    public var deliveryAttempts: Int
    public var contentHash: String
    /// Why it is in its state (the last transition's reason).
    public var reason: ReasonCode?
    public var leaseOwner: String?
    public var leasedUntil: Date?
    /// Who finished it.
    public var finishedBy: Finisher?
    /// The transaction the verifier matched, once verified.
    public var verifiedTransactionID: String?
    public var environment: String?
    /// When the receipt and raw file were pruned (`KeepFinished=`).
    public var prunedAt: Date?
    /// Who made an order no spool file brought (DESIGN §5b); `nil` for the phone's own.
    public var origin: OrderOrigin?

    public init(
        orderID: String, productID: String, state: OrderState, resumeState: OrderState? = nil,
        proof: OrderProof = OrderProof(), applicationUsername: String? = nil, userID: String? = nil,
        amount: String? = nil, currency: String? = nil, createdAt: Date? = nil, receivedAt: Date, updatedAt: Date,
        nextAttemptAt: Date? = nil, attempts: Int = 0, deliveryAttempts: Int = 0, contentHash: String,
        reason: ReasonCode? = nil, leaseOwner: String? = nil, leasedUntil: Date? = nil, finishedBy: Finisher? = nil,
        verifiedTransactionID: String? = nil, environment: String? = nil, prunedAt: Date? = nil, origin: OrderOrigin? = nil
    ) {
        self.orderID = orderID
        self.productID = productID
        self.state = state
        self.resumeState = resumeState
        self.proof = proof
        self.applicationUsername = applicationUsername
        self.userID = userID
        self.amount = amount
        self.currency = currency
        self.createdAt = createdAt
        self.receivedAt = receivedAt
        self.updatedAt = updatedAt
        self.nextAttemptAt = nextAttemptAt
        self.attempts = attempts
        self.deliveryAttempts = deliveryAttempts
        self.contentHash = contentHash
        self.reason = reason
        self.leaseOwner = leaseOwner
        self.leasedUntil = leasedUntil
        self.finishedBy = finishedBy
        self.verifiedTransactionID = verifiedTransactionID
        self.environment = environment
        self.prunedAt = prunedAt
        self.origin = origin
    }
}

/// One entry of an order's history: a transition, with the verifier's answer when it ended an
/// attempt.
public struct TransitionRecord: Sendable, Hashable {
    public var at: Date
    public var actor: TransitionActor
    /// `nil` for the transition that created the order.
    public var from: OrderState?
    public var to: OrderState
    /// A short, stable word (`ingested`, `proof_replaced`, `duplicate_transaction`, …).
    public var reason: ReasonCode
    /// Free text: an operator's note, the spool file, the verifier's message.
    public var detail: String?
    public var verifierStatus: Int?
    public var httpStatus: Int?
    public var environment: String?
    public var endpoint: String?
    public var latencyMilliseconds: Int?

    public init(
        at: Date, actor: TransitionActor, from: OrderState?, to: OrderState, reason: ReasonCode, detail: String? = nil,
        verifierStatus: Int? = nil, httpStatus: Int? = nil, environment: String? = nil, endpoint: String? = nil,
        latencyMilliseconds: Int? = nil
    ) {
        self.at = at
        self.actor = actor
        self.from = from
        self.to = to
        self.reason = reason
        self.detail = detail
        self.verifierStatus = verifierStatus
        self.httpStatus = httpStatus
        self.environment = environment
        self.endpoint = endpoint
        self.latencyMilliseconds = latencyMilliseconds
    }
}
