import Foundation
import ReconcileFoundation

/// A purchase a store reported on its own (DESIGN §5b): an App Store `ONE_TIME_CHARGE`'s signed
/// transaction, a Play `ONE_TIME_PRODUCT_PURCHASED` confirmed with `purchases.products.get`, or
/// what a support look-up found. Built only from what the store signed or confirmed; the phone's
/// order for it may come late or never.
///
/// Holds its proof (the signed transaction, the purchase token) for the order it may become;
/// ``description`` never shows it.
public struct DiscoveredPurchase: Sendable, Hashable {
    /// Where the daemon heard of it.
    public enum Via: String, Sendable, Hashable, CaseIterable {
        /// A notification file in the spool.
        case file
        /// The App Store's notification history.
        case history
        /// A Pub/Sub pull.
        case pubsub
        /// An operator's `reconcilectl recover`.
        case recover
    }

    public var store: PurchaseStore
    /// The store's key for the purchase, the one claims use: App Store `transactionId`; Play
    /// ``PlayMatcher/claimKey(orderID:tokenDigest:)`` (`google:<orderId>`, or the token's
    /// digest when Google gave no order id).
    public var transactionKey: String
    public var productID: String
    /// When it was bought, as the store says.
    public var purchasedAt: Date?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// Who to grant it to: `appAccountToken` / `obfuscatedExternalAccountId`, when the app set
    /// one at purchase.
    public var accountToken: String?
    /// Play's `obfuscatedExternalProfileId`, when present.
    public var profileID: String?
    /// What the order it becomes is verified with: the signed transaction (App Store) or the
    /// purchase token and its package (Play).
    public var proof: OrderProof
    /// A subscription purchase or renewal: never an order of its own (DESIGN §5b).
    public var isSubscription: Bool
    /// When the store took the money back, if it has.
    public var revokedAt: Date?
    public var via: Via

    public init(
        store: PurchaseStore, transactionKey: String, productID: String, purchasedAt: Date? = nil, environment: String? = nil,
        accountToken: String? = nil, profileID: String? = nil, proof: OrderProof, isSubscription: Bool = false,
        revokedAt: Date? = nil, via: Via
    ) {
        self.store = store
        self.transactionKey = transactionKey
        self.productID = productID
        self.purchasedAt = purchasedAt
        self.environment = environment
        self.accountToken = accountToken
        self.profileID = profileID
        self.proof = proof
        self.isSubscription = isSubscription
        self.revokedAt = revokedAt
        self.via = via
    }

    /// The purchase in a verified App Store transaction whose JWS is `signedTransaction`;
    /// `environment` is used when the transaction names none.
    public static func appStore(_ transaction: AppStoreTransaction, signedTransaction: String, environment: String?, via: Via) -> DiscoveredPurchase {
        DiscoveredPurchase(
            store: .appStore, transactionKey: transaction.transactionID, productID: transaction.productID,
            purchasedAt: transaction.purchaseDateMilliseconds.map(Date.init(epochMilliseconds:)),
            environment: transaction.environment ?? environment, accountToken: transaction.appAccountToken,
            proof: OrderProof(transactionID: transaction.transactionID, signedTransaction: signedTransaction),
            isSubscription: transaction.type == "Auto-Renewable Subscription",
            revokedAt: transaction.revocationDateMilliseconds.map(Date.init(epochMilliseconds:)), via: via)
    }

    /// The id of the order it becomes: `apple:<transactionId>`, or its Play claim key
    /// (`google:<orderId>`, `google-token:<digest>`); `nil` when that would not be a valid
    /// order id (DESIGN §3), which no store's id should ever make.
    public var orderID: String? {
        let id = store == .appStore ? "apple:\(transactionKey)" : transactionKey
        return OrderFileParser.isValidOrderID(id) ? id : nil
    }
}

extension DiscoveredPurchase: CustomStringConvertible {
    /// Its store, key and product — never its proof.
    public var description: String {
        "\(store.rawValue) purchase \(transactionKey) of \(productID)"
    }
}
