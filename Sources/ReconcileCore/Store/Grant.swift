/// What a verifier granted: the purchase the order is matched to, as delivery needs it.
public struct Grant: Sendable, Hashable {
    /// Apple's transaction id; for Google Play the purchase's `orderId` (none for promo codes).
    public var transactionID: String?
    public var originalTransactionID: String?
    /// The product the store says was bought (delivery sends the store's, not the client's).
    public var productID: String?
    public var quantity: Int?
    public var purchaseDateMilliseconds: Int64?
    /// `Production` or `Sandbox` (App Store); `Production` or `Test` (Google Play).
    public var environment: String?
    /// Google Play: the purchase's `acknowledgementState` when it was verified (0 yet to be
    /// acknowledged, 1 acknowledged); decides whether an acknowledgement is still owed.
    public var acknowledgementState: Int?
    /// Google Play: the purchase's `consumptionState` when it was verified (0 yet to be
    /// consumed, 1 consumed).
    public var consumptionState: Int?

    public init(
        transactionID: String? = nil, originalTransactionID: String? = nil, productID: String? = nil, quantity: Int? = nil,
        purchaseDateMilliseconds: Int64? = nil, environment: String? = nil, acknowledgementState: Int? = nil,
        consumptionState: Int? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDateMilliseconds = purchaseDateMilliseconds
        self.environment = environment
        self.acknowledgementState = acknowledgementState
        self.consumptionState = consumptionState
    }

    public init(_ item: AppleReceiptItem, environment: String?) {
        self.init(
            transactionID: item.transactionID, originalTransactionID: item.originalTransactionID, productID: item.productID,
            quantity: item.quantity, purchaseDateMilliseconds: item.purchaseDateMilliseconds, environment: environment)
    }

    /// Google Play's answer for a purchased order.
    public init(_ purchase: PlayPurchase, productID: String) {
        self.init(
            transactionID: purchase.orderID, productID: productID, quantity: purchase.quantity,
            purchaseDateMilliseconds: purchase.purchaseTimeMilliseconds, environment: purchase.isTest ? "Test" : "Production",
            acknowledgementState: purchase.acknowledgementState, consumptionState: purchase.consumptionState)
    }
}
