import Foundation
import ReconcileFoundation

/// A Google Play real-time developer notification as Cloud Pub/Sub pushes it (DESIGN §5a;
/// `docs/protocols/google-play.md` §6): `{"message":{"data":<base64>,"messageId":…},"subscription":…}`.
/// A push is trusted only as far as the Play API confirms it: it signals, it never decides.
public struct PlayNotification: Sendable, Hashable {
    /// What the notification is about.
    public enum Kind: Sendable, Hashable {
        /// A purchase was voided (refund, chargeback, revocation): confirmed with
        /// `voidedpurchases.list` before any order changes.
        case voided(purchaseToken: String, orderID: String?, productType: Int?, refundType: Int?)
        /// `oneTimeProductNotification`: purchased (1) or cancelled (2).
        case oneTimeProduct(type: Int?, purchaseToken: String, productID: String?)
        /// `testNotification`, sent from the Play Console.
        case test
        /// A subscription notification, or a kind this version does not know: recorded only.
        case other(String)
    }

    /// Pub/Sub's `messageId`: a redelivered push carries the same one.
    public var messageID: String
    public var packageName: String?
    public var eventTimeMilliseconds: Int64?
    public var kind: Kind

    public init(messageID: String, packageName: String? = nil, eventTimeMilliseconds: Int64? = nil, kind: Kind) {
        self.messageID = messageID
        self.packageName = packageName
        self.eventTimeMilliseconds = eventTimeMilliseconds
        self.kind = kind
    }

    /// A voided purchase notification: Google's voided purchases list is to be read.
    public var isVoided: Bool {
        if case .voided = kind { return true }
        return false
    }

    /// Why a push body is not a Play notification.
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a push body (the whole POST body Pub/Sub sent).
    public static func parse(_ body: [UInt8]) throws(Unparseable) -> PlayNotification {
        guard case .object(let envelope)? = try? JSONParser().parse(body) else {
            throw Unparseable(description: "the Pub/Sub push is not a JSON object")
        }
        guard let message = envelope["message"]?.objectValue else {
            throw Unparseable(description: "the Pub/Sub push has no \"message\" object")
        }
        guard let messageID = message["messageId"]?.stringOrNumberText, !messageID.isEmpty, messageID.utf8.count <= 128,
            messageID.unicodeScalars.allSatisfy({ $0.isASCII && !PrintableText.isControl($0) })
        else {
            throw Unparseable(description: "the Pub/Sub message has no usable \"messageId\"")
        }
        guard let encoded = message["data"]?.stringValue, let decoded = Data(base64Encoded: encoded) else {
            throw Unparseable(description: "the Pub/Sub message's \"data\" is not base64")
        }
        return try parse(data: Array(decoded), messageID: messageID)
    }

    /// Parses a message's decoded `data` (a `DeveloperNotification`), as a push carries it or a
    /// pull hands it out (``PubSubPullAnswer``); `messageID` is Pub/Sub's id for the message.
    public static func parse(data: [UInt8], messageID: String) throws(Unparseable) -> PlayNotification {
        guard case .object(let notification)? = try? JSONParser().parse(data) else {
            throw Unparseable(description: "the Pub/Sub message's data is not a JSON object")
        }
        var result = PlayNotification(messageID: messageID, kind: .other("unknown"))
        result.packageName = notification["packageName"]?.stringValue
        result.eventTimeMilliseconds = notification["eventTimeMillis"]?.stringOrNumberText.flatMap { Int64($0) }
        if let voided = notification["voidedPurchaseNotification"]?.objectValue {
            guard let token = voided["purchaseToken"]?.stringValue, !token.isEmpty else {
                throw Unparseable(description: "the voided purchase notification has no \"purchaseToken\"")
            }
            result.kind = .voided(
                purchaseToken: token, orderID: voided["orderId"]?.stringValue, productType: Self.integer(voided["productType"]),
                refundType: Self.integer(voided["refundType"]))
        } else if let product = notification["oneTimeProductNotification"]?.objectValue {
            guard let token = product["purchaseToken"]?.stringValue, !token.isEmpty else {
                throw Unparseable(description: "the one-time product notification has no \"purchaseToken\"")
            }
            result.kind = .oneTimeProduct(type: Self.integer(product["notificationType"]), purchaseToken: token, productID: product["sku"]?.stringValue)
        } else if notification["testNotification"] != nil {
            result.kind = .test
        } else if notification["subscriptionNotification"] != nil {
            result.kind = .other("subscriptionNotification")
        }
        return result
    }

    static func integer(_ value: JSONValue?) -> Int? {
        value?.stringOrNumberText.flatMap { Int($0) }
    }
}
