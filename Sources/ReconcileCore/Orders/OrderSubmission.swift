import Foundation

/// The validated content of one order file (DESIGN §3).
///
/// Built only by ``OrderFileParser``, so every instance satisfies the order-file rules. Unknown
/// keys of the file are not represented here; they stay in the stored raw copy.
public struct OrderSubmission: Sendable, Hashable {
    /// The merchant's order id: 1–128 of `A-Za-z0-9._:-`.
    public var orderID: String
    /// The product bought: 1–255 printable characters.
    public var productID: String
    public var proof: OrderProof
    /// The purchase's applicationUsername / appAccountToken.
    public var applicationUsername: String?
    /// Opaque user id.
    public var userID: String?
    /// Decimal string, informational only.
    public var amount: String?
    /// ISO 4217 code, informational only.
    public var currency: String?
    /// When the client says the purchase happened; clamped to the ingest time by the store.
    public var createdAt: Date?

    public init(
        orderID: String, productID: String, proof: OrderProof = OrderProof(), applicationUsername: String? = nil,
        userID: String? = nil, amount: String? = nil, currency: String? = nil, createdAt: Date? = nil
    ) {
        self.orderID = orderID
        self.productID = productID
        self.proof = proof
        self.applicationUsername = applicationUsername
        self.userID = userID
        self.amount = amount
        self.currency = currency
        self.createdAt = createdAt
    }
}
