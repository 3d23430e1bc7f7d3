import ReconcileFoundation

/// A signed transaction's payload (`JWSTransactionDecodedPayload`) after its signature and chain
/// were checked, reduced to what the daemon decides on (`docs/protocols/apple.md` §2.5).
///
/// Dates are milliseconds since 1970 and may carry a fraction (Xcode-signed payloads).
public struct AppStoreTransaction: Sendable, Hashable {
    public var transactionID: String
    public var originalTransactionID: String?
    public var bundleID: String?
    public var productID: String
    public var purchaseDateMilliseconds: Int64?
    public var quantity: Int
    /// Set when Apple refunded or revoked the purchase.
    public var revocationDateMilliseconds: Int64?
    /// `revocationReason`: 0 refunded for another reason, 1 for an issue in the app.
    public var revocationReason: Int?
    public var appAccountToken: String?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    public var environment: String?
    /// `Consumable`, `Non-Consumable`, `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var type: String?

    public init(
        transactionID: String, originalTransactionID: String? = nil, bundleID: String? = nil, productID: String,
        purchaseDateMilliseconds: Int64? = nil, quantity: Int = 1, revocationDateMilliseconds: Int64? = nil,
        appAccountToken: String? = nil, environment: String? = nil, type: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.bundleID = bundleID
        self.productID = productID
        self.purchaseDateMilliseconds = purchaseDateMilliseconds
        self.quantity = quantity
        self.revocationDateMilliseconds = revocationDateMilliseconds
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.type = type
    }

    /// Why a payload is not a transaction.
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a decoded payload (JSON bytes).
    public static func parse(_ payload: [UInt8]) throws(Unparseable) -> AppStoreTransaction {
        let object = try AppStoreDocument.object(payload, what: "signed transaction")
        guard let transactionID = AppStoreDocument.identifier(object["transactionId"]) else {
            throw Unparseable(description: "the signed transaction has no \"transactionId\"")
        }
        guard let productID = object["productId"]?.stringValue, !productID.isEmpty else {
            throw Unparseable(description: "the signed transaction has no \"productId\"")
        }
        var transaction = AppStoreTransaction(transactionID: transactionID, productID: productID)
        transaction.originalTransactionID = AppStoreDocument.identifier(object["originalTransactionId"])
        transaction.bundleID = object["bundleId"]?.stringValue
        transaction.purchaseDateMilliseconds = AppStoreDocument.milliseconds(object["purchaseDate"])
        transaction.quantity = object["quantity"].flatMap(AppStoreDocument.milliseconds).map { Int(clamping: $0) } ?? 1
        transaction.revocationDateMilliseconds = AppStoreDocument.milliseconds(object["revocationDate"])
        transaction.revocationReason = AppStoreDocument.milliseconds(object["revocationReason"]).map { Int(clamping: $0) }
        transaction.appAccountToken = object["appAccountToken"]?.stringValue
        transaction.environment = object["environment"]?.stringValue
        transaction.type = object["type"]?.stringValue
        return transaction
    }

    /// The purchase as the receipt matcher (DESIGN §5) sees purchases.
    public var item: AppleReceiptItem {
        AppleReceiptItem(
            productID: productID, transactionID: transactionID, originalTransactionID: originalTransactionID, quantity: quantity,
            purchaseDateMilliseconds: purchaseDateMilliseconds, cancellationDateMilliseconds: revocationDateMilliseconds,
            appAccountToken: appAccountToken, isRenewal: isRenewal)
    }

    /// An auto-renewable subscription's renewal: with the App Store Server API only the original
    /// transaction of a subscription is an order's purchase (DESIGN §5); consumables and
    /// non-consumables never renew.
    public var isRenewal: Bool {
        type == "Auto-Renewable Subscription" && AppleReceiptItem.differs(originalTransactionID, from: transactionID)
    }
}
