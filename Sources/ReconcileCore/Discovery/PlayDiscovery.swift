import Foundation
import ReconcileFoundation

/// A Google Play one-time purchase a real-time notification reported (DESIGN §5b), as Google
/// confirms it with `purchases.products.get`: the notification only names a token; what Google
/// answers for it decides. Kept as a discovered purchase only when Google says it is paid, a
/// license tester's purchase only with `AllowTestPurchases=yes`.
public enum PlayDiscovery {
    /// What Google's answer makes of the reported purchase.
    public enum Confirmation: Sendable, Hashable {
        /// Paid: kept as this discovered purchase.
        case purchase(DiscoveredPurchase)
        /// Not paid yet (pending): the notification is to be read again later.
        case pending(Reason)
        /// Nothing to keep (cancelled, a test purchase not allowed), and why.
        case notKept(Reason)
    }

    /// Google's `purchase` for `token` (its digest `tokenDigest`) of `productID` in `package`,
    /// reported by a notification that came `via`.
    public static func confirm(
        _ purchase: PlayPurchase, token: String, tokenDigest: String, package: String, productID: String, allowTestPurchases: Bool,
        via: DiscoveredPurchase.Via
    ) -> Confirmation {
        switch purchase.purchaseState {
        case PlayPurchase.purchased:
            break
        case PlayPurchase.cancelled:
            return .notKept(Reason(.cancelled, detail: "Google says the purchase was cancelled (purchaseState 1)"))
        case PlayPurchase.pending:
            return .pending(Reason(.paymentPending, detail: "Google says the payment is pending (purchaseState 2)"))
        default:
            return .pending(Reason(.playUnknownPurchaseState, detail: "Google answered purchaseState \(purchase.purchaseState)"))
        }
        if purchase.isTest && !allowTestPurchases {
            return .notKept(Reason(.sandboxNotAllowed, detail: "a license tester's test purchase (purchaseType 0), and AllowTestPurchases=no"))
        }
        return .purchase(DiscoveredPurchase(
            store: .googlePlay, transactionKey: PlayMatcher.claimKey(orderID: purchase.orderID, tokenDigest: tokenDigest),
            productID: purchase.productID ?? productID, purchasedAt: purchase.purchaseTimeMilliseconds.map(Date.init(epochMilliseconds:)),
            environment: purchase.isTest ? "Test" : "Production", accountToken: purchase.obfuscatedExternalAccountID,
            profileID: purchase.obfuscatedExternalProfileID, proof: OrderProof(purchaseToken: token, packageName: package), via: via))
    }
}
