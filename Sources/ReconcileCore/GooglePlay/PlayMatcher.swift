import Foundation
import ReconcileFoundation

/// Decides what Google Play's answer means for an order (DESIGN §5 "Google Play"): purchased,
/// cancelled or pending; a test purchase refused unless allowed; the account the app named must
/// be the order's; and the purchase claimed for one order only, under a key of its own store
/// (`google:<orderId>`, or `google-token:<sha256 of the token>` when there is no order id), so
/// that Google's ids never collide with Apple's bare transaction ids.
public enum PlayMatcher {
    /// What the order says about its purchase.
    public struct OrderKey: Sendable, Hashable {
        public var orderID: String
        public var productID: String
        public var applicationUsername: String?
        public var userID: String?

        public init(orderID: String, productID: String, applicationUsername: String? = nil, userID: String? = nil) {
            self.orderID = orderID
            self.productID = productID
            self.applicationUsername = applicationUsername
            self.userID = userID
        }
    }

    /// The purchase judged on its own, before claims are looked at.
    public enum Judgement: Sendable, Hashable {
        /// Paid, and the order's: claim it.
        case purchased
        /// Payment pending: try again later (not the endpoint's fault).
        case pending(Reason)
        case reject(Reason)
        case escalate(Reason)
    }

    public static func judge(_ purchase: PlayPurchase, for order: OrderKey, allowTestPurchases: Bool) -> Judgement {
        switch purchase.purchaseState {
        case PlayPurchase.purchased:
            break
        case PlayPurchase.cancelled:
            return .reject(Reason(.cancelled, detail: "Google says the purchase was cancelled (purchaseState 1)"))
        case PlayPurchase.pending:
            return .pending(Reason(.paymentPending, detail: "Google says the payment is pending (purchaseState 2)"))
        default:
            return .pending(Reason(.playUnknownPurchaseState, detail: "Google answered purchaseState \(purchase.purchaseState)"))
        }
        if let product = purchase.productID, product != order.productID {
            return .escalate(Reason(
                .productMismatch, detail: "Google says the token bought \(PrintableText.excerpt(product, maximumScalars: 80)), the order \(order.productID)"))
        }
        if let account = purchase.obfuscatedExternalAccountID {
            let named = [order.applicationUsername, order.userID].compactMap { $0 }
            if !named.isEmpty && !named.contains(account) {
                return .escalate(Reason(
                    ReasonCode.accountMismatch,
                    detail: "the purchase's obfuscatedExternalAccountId is neither the order's application_username nor its user_id"))
            }
        }
        if purchase.isTest && !allowTestPurchases {
            return .reject(Reason(.sandboxNotAllowed, detail: "a license tester's test purchase (purchaseType 0), and AllowTestPurchases=no"))
        }
        return .purchased
    }

    /// The claim a purchase takes: `google:<orderId>`, or `google-token:<hex SHA-256 of the
    /// token>` for a purchase without an order id (promo codes).
    public static func claimKey(orderID: String?, tokenDigest: String) -> String {
        if let orderID, !orderID.isEmpty { return "google:\(orderID)" }
        return "google-token:\(tokenDigest)"
    }

    /// The decision once the claim's holder is known.
    public enum Result: Sendable, Hashable {
        case matched(claimKey: String)
        case duplicateTransaction(claimKey: String, claimant: String)
    }

    /// - Parameter claims: claim key → the order id holding it (the order's own claim does not
    ///   count against it: a re-verification after a crash finds its own claim).
    public static func match(claimKey: String, orderID: String, claims: [String: String]) -> Result {
        if let holder = claims[claimKey], holder != orderID {
            return .duplicateTransaction(claimKey: claimKey, claimant: holder)
        }
        return .matched(claimKey: claimKey)
    }
}
