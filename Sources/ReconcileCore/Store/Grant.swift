/// What a verifier granted: the purchase the order is matched to, as delivery needs it.
public struct Grant: Sendable, Hashable {
    public var transactionID: String?
    public var originalTransactionID: String?
    /// The product Apple says was bought (delivery sends Apple's, not the client's).
    public var productID: String?
    public var quantity: Int?
    public var purchaseDateMilliseconds: Int64?
    /// `Production` or `Sandbox`.
    public var environment: String?

    public init(
        transactionID: String? = nil, originalTransactionID: String? = nil, productID: String? = nil, quantity: Int? = nil,
        purchaseDateMilliseconds: Int64? = nil, environment: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDateMilliseconds = purchaseDateMilliseconds
        self.environment = environment
    }

    public init(_ item: AppleReceiptItem, environment: String?) {
        self.init(
            transactionID: item.transactionID, originalTransactionID: item.originalTransactionID, productID: item.productID,
            quantity: item.quantity, purchaseDateMilliseconds: item.purchaseDateMilliseconds, environment: environment)
    }
}
