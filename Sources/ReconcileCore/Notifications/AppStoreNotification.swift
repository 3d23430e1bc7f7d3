import ReconcileFoundation

/// An App Store Server Notification V2 (DESIGN §5a; `docs/protocols/app-store-notifications.md` §1), its
/// decoded payload reduced to what the daemon decides on. Only ever built from a payload whose
/// signature, chain, bundle and environment were checked.
public struct AppStoreNotification: Sendable, Hashable {
    /// `notificationUUID`: a retry carries the same one (the key that takes a notification in once).
    public var id: String
    /// `REFUND`, `REVOKE`, `REFUND_REVERSED`, `CONSUMPTION_REQUEST`, `TEST`, …
    public var type: String
    public var subtype: String?
    /// `signedDate`, milliseconds since 1970.
    public var signedDateMilliseconds: Int64?
    public var bundleID: String?
    public var appAppleID: String?
    /// `Production`, `Sandbox` (also `Xcode`, `LocalTesting` in Apple's test data).
    public var environment: String?
    /// `data.signedTransactionInfo`: a JWS of its own, verified before anything is taken from it.
    /// Never logged or stored.
    public var signedTransactionInfo: String?
    /// `data.consumptionRequestReason` (`CONSUMPTION_REQUEST` only).
    public var consumptionRequestReason: String?

    public init(
        id: String, type: String, subtype: String? = nil, signedDateMilliseconds: Int64? = nil, bundleID: String? = nil,
        appAppleID: String? = nil, environment: String? = nil, signedTransactionInfo: String? = nil, consumptionRequestReason: String? = nil
    ) {
        self.id = id
        self.type = type
        self.subtype = subtype
        self.signedDateMilliseconds = signedDateMilliseconds
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.consumptionRequestReason = consumptionRequestReason
    }

    /// The types that change an order (the others are recorded and ignored).
    public static let refund = "REFUND"
    public static let revoke = "REVOKE"
    public static let refundReversed = "REFUND_REVERSED"
    public static let consumptionRequest = "CONSUMPTION_REQUEST"
    public static let test = "TEST"
    /// A consumable, non-consumable or non-renewing subscription was bought: a purchase the
    /// phone may never send (DESIGN §5b).
    public static let oneTimeCharge = "ONE_TIME_CHARGE"

    /// The types something is done with (an order revoked or reinstated, a consumption request
    /// answered, a purchase discovered). A payload of another type that fails verification is
    /// skipped without holding the polling checkpoint: nothing rests on it.
    public static let typesInUse: Set<String> = [refund, revoke, refundReversed, consumptionRequest, oneTimeCharge]

    /// Parses a decoded payload (`responseBodyV2DecodedPayload`). `data`, `summary`,
    /// `appData` and `externalPurchaseToken` payloads all parse; only `data` carries a transaction.
    public static func parse(_ payload: [UInt8]) throws(AppStoreTransaction.Unparseable) -> AppStoreNotification {
        let object = try AppStoreDocument.object(payload, what: "notification")
        guard let id = object["notificationUUID"]?.stringValue, !id.isEmpty, id.utf8.count <= 64 else {
            throw AppStoreTransaction.Unparseable(description: "the notification has no \"notificationUUID\"")
        }
        guard let type = object["notificationType"]?.stringValue, !type.isEmpty, type.utf8.count <= 64 else {
            throw AppStoreTransaction.Unparseable(description: "the notification has no \"notificationType\"")
        }
        var notification = AppStoreNotification(id: id, type: type)
        notification.subtype = object["subtype"]?.stringValue
        notification.signedDateMilliseconds = AppStoreDocument.milliseconds(object["signedDate"])
        let body = object["data"]?.objectValue ?? object["summary"]?.objectValue ?? object["appData"]?.objectValue
            ?? object["externalPurchaseToken"]?.objectValue
        if let body {
            notification.bundleID = body["bundleId"]?.stringValue
            notification.appAppleID = AppStoreDocument.identifier(body["appAppleId"])
            notification.environment = body["environment"]?.stringValue
        }
        if let token = object["externalPurchaseToken"]?.objectValue, notification.environment == nil {
            // No environment of its own: Apple's library reads it from the id's prefix.
            notification.environment = token["externalPurchaseId"]?.stringValue?.hasPrefix("SANDBOX") == true ? "Sandbox" : "Production"
        }
        if let data = object["data"]?.objectValue {
            notification.signedTransactionInfo = data["signedTransactionInfo"]?.stringValue
            notification.consumptionRequestReason = data["consumptionRequestReason"]?.stringValue
        }
        return notification
    }
}
