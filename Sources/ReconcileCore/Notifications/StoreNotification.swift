import Foundation
import ReconcileFoundation

/// A store notification as the daemon keeps it (DESIGN §5a): who sent it, what it says, and which
/// transaction it is about — decoded from a payload that was verified first. Never holds the
/// signed payload, a token or a receipt.
public struct StoreNotification: Sendable, Hashable {
    /// Which store sent it.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        case appStore = "app_store"
        case googlePlay = "google_play"
    }

    /// How it came: a spool file (a web handler dropped it) or the daemon's own polling.
    public enum Via: String, Sendable, Hashable, CaseIterable {
        case file
        case poll
    }

    public var source: Source
    /// The store's id for it (`notificationUUID`; Play: `voided:<token digest>:<voided time>`,
    /// a push `pubsub:<messageId>`):
    /// taken in once, whichever way it comes.
    public var notificationID: String
    /// `REFUND`, `REVOKE`, `REFUND_REVERSED`, `CONSUMPTION_REQUEST`, `TEST`, …
    public var type: String
    public var subtype: String?
    /// The transaction it is about (App Store `transactionId`; Play `orderId`).
    public var transactionID: String?
    public var originalTransactionID: String?
    public var productID: String?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// When the store signed (sent) it.
    public var signedAt: Date?
    /// When the store took the money back (`revocationDate`).
    public var revokedAt: Date?
    /// Apple's `revocationReason` (0 other, 1 an issue in the app); Play's `voidedReason`.
    public var revocationReason: Int?
    public var via: Via
    /// Google Play's purchase token, in hand while a voided purchase is taken in: it finds an
    /// order not verified yet (no claim to match). Never stored, printed or logged.
    public var purchaseToken: String?
    /// A purchase the store reported on its own (an App Store `ONE_TIME_CHARGE`, DESIGN §5b),
    /// in hand while the notification is taken in: kept as a discovered purchase in the same
    /// transaction, never with the notification.
    public var discovered: DiscoveredPurchase?

    public init(
        source: Source, notificationID: String, type: String, subtype: String? = nil, transactionID: String? = nil,
        originalTransactionID: String? = nil, productID: String? = nil, environment: String? = nil, signedAt: Date? = nil,
        revokedAt: Date? = nil, revocationReason: Int? = nil, via: Via, purchaseToken: String? = nil
    ) {
        self.source = source
        self.notificationID = notificationID
        self.type = type
        self.subtype = subtype
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.environment = environment
        self.signedAt = signedAt
        self.revokedAt = revokedAt
        self.revocationReason = revocationReason
        self.via = via
        self.purchaseToken = purchaseToken
    }

    /// What it means for the order it is about.
    public enum Effect: Sendable, Hashable {
        /// The store took the money back; the reason code (`refunded`, `revoked`, `chargeback`).
        case revoke(reason: ReasonCode)
        /// The store reversed a refund.
        case reinstate
        /// Recorded, and nothing changes (`TEST`, `CONSUMPTION_REQUEST`, `REFUND_DECLINED`, …).
        case none
    }

    public var effect: Effect {
        switch (source, type) {
        case (.appStore, AppStoreNotification.refund): .revoke(reason: .refunded)
        case (.appStore, AppStoreNotification.revoke): .revoke(reason: .revoked)
        case (.appStore, AppStoreNotification.refundReversed): .reinstate
        case (.googlePlay, Self.playVoidedType): .revoke(reason: subtype == "GOOGLE" || revocationReason == PlayVoidedPurchase.reasonChargeback ? .chargeback : .refunded)
        default: .none
        }
    }

    /// The type of a voided purchase read from `voidedpurchases.list`: the only Google Play
    /// notification that changes an order (a Pub/Sub push only asks for that list to be read).
    public static let playVoidedType = "VOIDED_PURCHASE"

    /// Builds the kept form of a voided purchase the Play API listed. Its id — the token's
    /// digest and the voided time (DESIGN §5a) — takes it in once however often it is listed;
    /// `transactionID` is the purchase's claim key (``PlayMatcher/claimKey(orderID:tokenDigest:)``),
    /// by which its order is found.
    public static func playVoided(_ voided: PlayVoidedPurchase, tokenDigest: String, via: Via) -> StoreNotification {
        let at = Date(timeIntervalSince1970: Double(voided.voidedTimeMilliseconds) / 1000)
        return StoreNotification(
            source: .googlePlay, notificationID: "voided:\(tokenDigest):\(voided.voidedTimeMilliseconds)", type: playVoidedType,
            subtype: voided.sourceName, transactionID: PlayMatcher.claimKey(orderID: voided.orderID, tokenDigest: tokenDigest),
            signedAt: at, revokedAt: at, revocationReason: voided.voidedReason, via: via, purchaseToken: voided.purchaseToken)
    }

    /// Builds the kept form of a Pub/Sub push (a spool file): recorded only — what it says is
    /// believed once `voidedpurchases.list` lists it. Its id is the push's `messageId`.
    public static func playPush(_ push: PlayNotification) -> StoreNotification {
        let type: String
        var subtype: String?
        var productID: String?
        switch push.kind {
        case .voided(_, _, let productType, let refundType):
            type = "voidedPurchaseNotification"
            subtype = productType == 1 ? "SUBSCRIPTION" : refundType == 2 ? "QUANTITY_BASED_PARTIAL_REFUND" : refundType == 1 ? "FULL_REFUND" : nil
        case .oneTimeProduct(let notificationType, _, let sku):
            type = "oneTimeProductNotification"
            subtype = notificationType == 1 ? "ONE_TIME_PRODUCT_PURCHASED" : notificationType == 2 ? "ONE_TIME_PRODUCT_CANCELED" : nil
            productID = sku.map { PrintableText.excerpt($0, maximumScalars: 255) }
        case .test:
            type = "testNotification"
        case .other(let name):
            type = name
        }
        return StoreNotification(
            source: .googlePlay, notificationID: "pubsub:\(push.messageID)", type: type, subtype: subtype, productID: productID,
            signedAt: push.eventTimeMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) }, via: .file)
    }

    /// Builds the kept form of a verified App Store notification and its verified transaction;
    /// `signedTransaction`, the transaction's JWS, is the proof a `ONE_TIME_CHARGE`'s purchase
    /// carries in hand (``discovered``).
    public static func appStore(
        _ notification: AppStoreNotification, transaction: AppStoreTransaction?, signedTransaction: String? = nil, via: Via
    ) -> StoreNotification {
        var kept = StoreNotification(
            source: .appStore, notificationID: notification.id, type: notification.type, subtype: notification.subtype,
            transactionID: transaction?.transactionID, originalTransactionID: transaction?.originalTransactionID,
            productID: transaction?.productID, environment: notification.environment ?? transaction?.environment,
            signedAt: notification.signedDateMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            revokedAt: transaction?.revocationDateMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            revocationReason: transaction?.revocationReason, via: via)
        if notification.type == AppStoreNotification.oneTimeCharge, let transaction, let signedTransaction {
            kept.discovered = DiscoveredPurchase.appStore(
                transaction, signedTransaction: signedTransaction, environment: notification.environment, via: via == .file ? .file : .history)
        }
        return kept
    }
}

extension StoreNotification: CustomStringConvertible {
    /// Its source, id, type and transaction — never the purchase token.
    public var description: String {
        "\(source.rawValue) \(type) \(notificationID)\(transactionID.map { " transaction \($0)" } ?? "")"
    }
}
