import Foundation
import ReconcileFoundation

/// One purchase of a customer's store order as the store signed or confirmed it
/// (`reconcilectl lookup`; DESIGN §5b), with which stored order holds it. Its ``purchase`` keeps
/// the proof for `recover`; ``json`` never shows it.
public struct LookedUpPurchase: Sendable, Hashable {
    /// Where the purchase stands with the store.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case purchased
        /// Not paid yet (Play's pending payment).
        case pending
        case cancelled
        /// Google is refunding it.
        case refundPending = "refund_pending"
        case partiallyRefunded = "partially_refunded"
        /// Refunded, or revoked (Family Sharing ended, say).
        case refunded
        /// A state this version does not know.
        case unknown

        /// The state of a Play order.
        public init(_ state: PlayOrder.State) {
            switch state {
            case .processed: self = .purchased
            case .pending: self = .pending
            case .canceled: self = .cancelled
            case .pendingRefund: self = .refundPending
            case .partiallyRefunded: self = .partiallyRefunded
            case .refunded: self = .refunded
            case .other: self = .unknown
            }
        }
    }

    public var purchase: DiscoveredPurchase
    public var state: State
    /// When the store took the money back, if it did.
    public var refundedAt: Date?
    /// A license tester's purchase (Play's `purchaseType` 0): nobody paid.
    public var isTest: Bool
    /// The stored order holding its transaction, if any (filled in by the store).
    public var heldBy: String?
    /// Where the daemon's own discovery of it stands (`reconcilectl discovered`), if it heard of it.
    public var discovered: DiscoveryRules.Status?

    public init(
        purchase: DiscoveredPurchase, state: State, refundedAt: Date? = nil, isTest: Bool = false, heldBy: String? = nil,
        discovered: DiscoveryRules.Status? = nil
    ) {
        self.purchase = purchase
        self.state = state
        self.refundedAt = refundedAt
        self.isTest = isTest
        self.heldBy = heldBy
        self.discovered = discovered
    }

    /// The purchase in a verified App Store transaction a look-up returned: refunded when Apple
    /// revoked it.
    public static func appStore(_ transaction: AppStoreTransaction, signedTransaction: String) -> LookedUpPurchase {
        let purchase = DiscoveredPurchase.appStore(transaction, signedTransaction: signedTransaction, environment: nil, via: .recover)
        return LookedUpPurchase(purchase: purchase, state: purchase.revokedAt == nil ? .purchased : .refunded, refundedAt: purchase.revokedAt)
    }

    /// A Play order's line item `item`, confirmed by `purchases.products.get` (`purchase`) for
    /// the order's token; `tokenDigest` is that token's digest. A refunded order's purchase
    /// counts as revoked.
    public static func googlePlay(
        _ order: PlayOrder, item: PlayOrder.LineItem, purchase: PlayPurchase, package: String, tokenDigest: String
    ) -> LookedUpPurchase {
        var state = State(order.state)
        if state == .purchased && purchase.purchaseState != PlayPurchase.purchased {
            // Google's two answers disagree: the purchase's own state wins.
            state = purchase.purchaseState == PlayPurchase.pending ? .pending : .cancelled
        }
        let refundedAt = order.refundTime
        let discovered = DiscoveredPurchase(
            store: .googlePlay, transactionKey: PlayMatcher.claimKey(orderID: purchase.orderID ?? order.orderID, tokenDigest: tokenDigest),
            productID: item.productID, purchasedAt: purchase.purchaseTimeMilliseconds.map(Date.init(epochMilliseconds:)) ?? order.createdAt,
            environment: purchase.isTest ? "Test" : "Production", accountToken: purchase.obfuscatedExternalAccountID,
            profileID: purchase.obfuscatedExternalProfileID, proof: OrderProof(purchaseToken: order.purchaseToken, packageName: package),
            isSubscription: item.isSubscription, revokedAt: refundedAt, via: .recover)
        return LookedUpPurchase(purchase: discovered, state: state, refundedAt: refundedAt, isTest: purchase.isTest)
    }

    /// A subscription's line item of a Play order: shown, never recovered (no token read).
    public static func playSubscription(_ order: PlayOrder, item: PlayOrder.LineItem, package: String) -> LookedUpPurchase {
        let refundedAt = order.refundTime
        let purchase = DiscoveredPurchase(
            store: .googlePlay, transactionKey: PlayMatcher.claimKey(orderID: order.orderID, tokenDigest: ""), productID: item.productID,
            purchasedAt: order.createdAt, proof: OrderProof(purchaseToken: order.purchaseToken, packageName: package), isSubscription: true,
            revokedAt: refundedAt, via: .recover)
        return LookedUpPurchase(purchase: purchase, state: State(order.state), refundedAt: refundedAt)
    }

    /// The object `lookup --json` prints for it (documented in `docs/reconcilectl.md`): every
    /// field always there, `null` when it has no value; never the proof.
    public var json: JSONValue {
        .object(JSONObject([
            "store": .string(purchase.store.rawValue), "transaction": .string(purchase.transactionKey),
            "product_id": .string(purchase.productID), "kind": .string(purchase.isSubscription ? "subscription" : "one_time"),
            "state": .string(state.rawValue), "test": .bool(isTest),
            "purchased_at": purchase.purchasedAt.map { .string(RFC3339.format($0)) } ?? .null,
            "refunded_at": refundedAt.map { .string(RFC3339.format($0)) } ?? .null,
            "account": .string(orNull: purchase.accountToken), "held_by": .string(orNull: heldBy),
            "discovered": .string(orNull: discovered?.code),
        ]))
    }
}

extension LookedUpPurchase.State {
    /// Money was taken back, wholly or in part, or is being.
    public var isRefund: Bool { self == .refundPending || self == .partiallyRefunded || self == .refunded }
}
