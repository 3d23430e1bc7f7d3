import Foundation

/// An order the scheduler has leased for one attempt: everything a verifier or the delivery
/// client needs, as it was when the lease was taken.
public struct ClaimedOrder: Sendable, Hashable {
    /// The store's key for the row.
    public var reference: Int64
    public var orderID: String
    public var productID: String
    public var kind: WorkKind
    public var proof: OrderProof
    public var applicationUsername: String?
    public var userID: String?
    public var amount: String?
    public var currency: String?
    public var createdAt: Date?
    public var receivedAt: Date
    /// Attempts of this kind, this one included (when charged).
    public var attempt: Int
    /// Whether this attempt counts against `MaxAttempts` (a circuit's probe does not).
    public var charged: Bool
    /// `21002` answers so far.
    public var malformedAnswers: Int
    /// What verification granted, for delivery.
    public var grant: Grant?
    /// Which proof the attempt carries; newer proof arriving meanwhile is noticed at completion.
    public var proofRevision: Int64
    /// Who made an order no spool file brought (DESIGN §5b): the delivery body says so.
    public var origin: OrderOrigin?

    public init(
        reference: Int64, orderID: String, productID: String, kind: WorkKind, proof: OrderProof,
        applicationUsername: String? = nil, userID: String? = nil, amount: String? = nil, currency: String? = nil,
        createdAt: Date? = nil, receivedAt: Date, attempt: Int, charged: Bool = true, malformedAnswers: Int = 0,
        grant: Grant? = nil, proofRevision: Int64 = 1, origin: OrderOrigin? = nil
    ) {
        self.reference = reference
        self.orderID = orderID
        self.productID = productID
        self.kind = kind
        self.proof = proof
        self.applicationUsername = applicationUsername
        self.userID = userID
        self.amount = amount
        self.currency = currency
        self.createdAt = createdAt
        self.receivedAt = receivedAt
        self.attempt = attempt
        self.charged = charged
        self.malformedAnswers = malformedAnswers
        self.grant = grant
        self.proofRevision = proofRevision
        self.origin = origin
    }

    /// What the receipt matcher compares.
    public var matchKey: ReceiptMatcher.OrderKey {
        ReceiptMatcher.OrderKey(
            orderID: orderID, productID: productID, transactionID: proof.transactionID,
            applicationUsername: applicationUsername, referenceTime: createdAt ?? receivedAt)
    }
}

extension ClaimedOrder {
    /// What Google Play's answer is judged against.
    public var playKey: PlayMatcher.OrderKey {
        PlayMatcher.OrderKey(orderID: orderID, productID: productID, applicationUsername: applicationUsername, userID: userID)
    }
}
