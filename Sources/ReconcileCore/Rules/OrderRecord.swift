import Foundation

/// An order's row as the rules of DESIGN §3–§6 see it: every column a decision reads or changes
/// (everything but the raw spool file). A store reads the record, hands it with an event to one
/// of the rules (``CompletionRules``, ``OperatorRules``, ``IngestRules``, ``LeaseRules``), and
/// writes back the ``OrderPlan`` the rule returns; so every store applies the same rules.
public struct OrderRecord: Sendable, Hashable {
    /// The store's key for the row; 0 for an order not inserted yet.
    public var reference: Int64
    public var orderID: String
    public var productID: String
    public var state: OrderState
    /// See ``OrderLifecycle/Context/resumeState``.
    public var resumeState: OrderState?
    /// While the order is held: the resume state it had when it was held (restored by release).
    public var heldResumeState: OrderState?
    /// While the order is held: the reason it had when it was held (restored by release).
    public var heldReason: ReasonCode?
    /// The reason code of the transition that put the order where it is.
    public var reason: ReasonCode?
    public var proof: OrderProof
    /// Counts proof replacements: an attempt's verdict stands only for the proof it carried.
    public var proofRevision: Int64
    public var applicationUsername: String?
    public var userID: String?
    public var amount: String?
    public var currency: String?
    public var createdAt: Date?
    public var contentHash: String
    public var receivedAt: Date
    public var updatedAt: Date
    /// Set exactly while the order waits for an attempt (`pending`, or `verified` awaiting delivery).
    public var nextAttemptAt: Date?
    public var attempts: Int
    public var deliveryAttempts: Int
    /// Apple's 21002 (and the App Store Server API's 5000000) answers so far.
    public var malformedAnswers: Int
    public var lease: Lease?
    /// An operator's action that waits for the attempt in flight to end.
    public var deferredAction: DeferredAction?
    /// What verification granted (`verified_*` columns).
    public var grant: Grant?
    public var finishedBy: Finisher?
    public var prunedAt: Date?
    /// Who made an order no spool file brought (DESIGN §5b); `nil` for the phone's own.
    public var origin: OrderOrigin?

    /// Who holds an order for an attempt, until when, and for which proof.
    public struct Lease: Sendable, Hashable {
        public var owner: String
        public var until: Date?
        /// The proof revision the attempt carries.
        public var proofRevision: Int64?

        public init(owner: String, until: Date?, proofRevision: Int64?) {
            self.owner = owner
            self.until = until
            self.proofRevision = proofRevision
        }
    }

    public init(
        reference: Int64, orderID: String, productID: String, state: OrderState, resumeState: OrderState? = nil,
        heldResumeState: OrderState? = nil, heldReason: ReasonCode? = nil, reason: ReasonCode? = nil, proof: OrderProof = OrderProof(),
        proofRevision: Int64 = 1, applicationUsername: String? = nil, userID: String? = nil, amount: String? = nil,
        currency: String? = nil, createdAt: Date? = nil, contentHash: String = "", receivedAt: Date, updatedAt: Date,
        nextAttemptAt: Date? = nil, attempts: Int = 0, deliveryAttempts: Int = 0, malformedAnswers: Int = 0, lease: Lease? = nil,
        deferredAction: DeferredAction? = nil, grant: Grant? = nil, finishedBy: Finisher? = nil, prunedAt: Date? = nil,
        origin: OrderOrigin? = nil
    ) {
        self.reference = reference
        self.orderID = orderID
        self.productID = productID
        self.state = state
        self.resumeState = resumeState
        self.heldResumeState = heldResumeState
        self.heldReason = heldReason
        self.reason = reason
        self.proof = proof
        self.proofRevision = proofRevision
        self.applicationUsername = applicationUsername
        self.userID = userID
        self.amount = amount
        self.currency = currency
        self.createdAt = createdAt
        self.contentHash = contentHash
        self.receivedAt = receivedAt
        self.updatedAt = updatedAt
        self.nextAttemptAt = nextAttemptAt
        self.attempts = attempts
        self.deliveryAttempts = deliveryAttempts
        self.malformedAnswers = malformedAnswers
        self.lease = lease
        self.deferredAction = deferredAction
        self.grant = grant
        self.finishedBy = finishedBy
        self.prunedAt = prunedAt
        self.origin = origin
    }

    /// Attempts of `kind` so far.
    public func attempts(_ kind: WorkKind) -> Int {
        kind.isVerification ? attempts : deliveryAttempts
    }

    /// The order as `reconcilectl show` and the store's readers see it.
    public var storedOrder: StoredOrder {
        StoredOrder(
            orderID: orderID, productID: productID, state: state, resumeState: resumeState, proof: proof,
            applicationUsername: applicationUsername, userID: userID, amount: amount, currency: currency, createdAt: createdAt,
            receivedAt: receivedAt, updatedAt: updatedAt, nextAttemptAt: nextAttemptAt, attempts: attempts,
            deliveryAttempts: deliveryAttempts, contentHash: contentHash, reason: reason, leaseOwner: lease?.owner,
            leasedUntil: lease?.until, finishedBy: finishedBy, verifiedTransactionID: grant?.transactionID,
            environment: grant?.environment, prunedAt: prunedAt, origin: origin)
    }
}
