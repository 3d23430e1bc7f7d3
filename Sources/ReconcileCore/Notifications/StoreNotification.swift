import Foundation

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
    /// The store's id for it (`notificationUUID`; Play: purchase token digest + voided time):
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

    public init(
        source: Source, notificationID: String, type: String, subtype: String? = nil, transactionID: String? = nil,
        originalTransactionID: String? = nil, productID: String? = nil, environment: String? = nil, signedAt: Date? = nil,
        revokedAt: Date? = nil, revocationReason: Int? = nil, via: Via
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
    }

    /// What it means for the order it is about.
    public enum Effect: Sendable, Hashable {
        /// The store took the money back; the reason code (`refunded`, `revoked`, `chargeback`).
        case revoke(reason: String)
        /// The store reversed a refund.
        case reinstate
        /// Recorded, and nothing changes (`TEST`, `CONSUMPTION_REQUEST`, `REFUND_DECLINED`, …).
        case none
    }

    public var effect: Effect {
        switch (source, type) {
        case (.appStore, AppStoreNotification.refund): .revoke(reason: "refunded")
        case (.appStore, AppStoreNotification.revoke): .revoke(reason: "revoked")
        case (.appStore, AppStoreNotification.refundReversed): .reinstate
        default: .none
        }
    }

    /// Builds the kept form of a verified App Store notification and its verified transaction.
    public static func appStore(_ notification: AppStoreNotification, transaction: AppStoreTransaction?, via: Via) -> StoreNotification {
        StoreNotification(
            source: .appStore, notificationID: notification.id, type: notification.type, subtype: notification.subtype,
            transactionID: transaction?.transactionID, originalTransactionID: transaction?.originalTransactionID,
            productID: transaction?.productID, environment: notification.environment ?? transaction?.environment,
            signedAt: notification.signedDateMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            revokedAt: transaction?.revocationDateMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            revocationReason: transaction?.revocationReason, via: via)
    }
}
