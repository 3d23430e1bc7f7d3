import ReconcileFoundation

/// One record of Google Play's `voidedpurchases.list` (DESIGN §5a; `docs/protocols/google-play.md` §4):
/// a purchase Google took back — refunded, charged back or revoked — as the API, not a push,
/// says it. Holds the purchase token only to find the order; it is never logged or stored
/// (``StoreNotification/playVoided(_:tokenDigest:via:)`` keeps its digest).
///
/// Lenient where Google is: `voidedSource`, `voidedReason` and the times come as strings in
/// Google's own sample and as numbers in its discovery document; both are read.
public struct PlayVoidedPurchase: Sendable, Hashable {
    public var purchaseToken: String
    /// `GPA.…`; promo-code purchases have none.
    public var orderID: String?
    public var purchaseTimeMilliseconds: Int64?
    /// When Google voided it.
    public var voidedTimeMilliseconds: Int64
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud,
    /// 6 friendly fraud, 7 chargeback, 8 not acknowledged in time.
    public var voidedReason: Int?
    /// Units voided by a quantity-based partial refund; absent for the whole purchase.
    public var voidedQuantity: Int?

    public init(
        purchaseToken: String, orderID: String? = nil, purchaseTimeMilliseconds: Int64? = nil, voidedTimeMilliseconds: Int64,
        voidedSource: Int? = nil, voidedReason: Int? = nil, voidedQuantity: Int? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderID = orderID
        self.purchaseTimeMilliseconds = purchaseTimeMilliseconds
        self.voidedTimeMilliseconds = voidedTimeMilliseconds
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.voidedQuantity = voidedQuantity
    }

    public static let sourceGoogle = 2
    public static let reasonChargeback = 7

    /// The name of `voidedSource`, as the notification's subtype.
    public var sourceName: String? {
        switch voidedSource {
        case 0: "USER"
        case 1: "DEVELOPER"
        case 2: "GOOGLE"
        case let other?: "SOURCE_\(other)"
        case nil: nil
        }
    }

    /// One page of `VoidedPurchasesListResponse`.
    public struct Page: Sendable, Hashable {
        public var purchases: [PlayVoidedPurchase]
        /// `tokenPagination.nextPageToken`: more to read.
        public var nextPageToken: String?

        public init(purchases: [PlayVoidedPurchase], nextPageToken: String?) {
            self.purchases = purchases
            self.nextPageToken = nextPageToken
        }
    }

    /// Why a body is not a page of voided purchases (never quoting a token).
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a `voidedpurchases.list` answer. A record without a purchase token or a voided
    /// time makes the whole page unparseable: skipping it would move the checkpoint past it.
    public static func parsePage(_ body: [UInt8]) throws(Unparseable) -> Page {
        guard case .object(let object)? = try? JSONParser(maximumDepth: 8).parse(body) else {
            throw Unparseable(description: "the voided purchases answer is not a JSON object")
        }
        var purchases: [PlayVoidedPurchase] = []
        if let list = object["voidedPurchases"], list != .null {
            guard case .array(let items) = list else { throw Unparseable(description: "\"voidedPurchases\" is not an array") }
            for (index, item) in items.enumerated() {
                guard case .object(let record) = item else { throw Unparseable(description: "voided purchase \(index + 1) is not an object") }
                purchases.append(try parse(record, number: index + 1))
            }
        }
        var next: String?
        if let pagination = object["tokenPagination"]?.objectValue, let token = pagination["nextPageToken"]?.stringValue, !token.isEmpty {
            guard token.utf8.count <= 4096, token.unicodeScalars.allSatisfy({ $0.isASCII && !PrintableText.isControl($0) }) else {
                throw Unparseable(description: "\"nextPageToken\" is not a short printable string")
            }
            next = token
        }
        return Page(purchases: purchases, nextPageToken: next)
    }

    static func parse(_ record: JSONObject, number: Int) throws(Unparseable) -> PlayVoidedPurchase {
        guard let token = record["purchaseToken"]?.stringValue, !token.isEmpty, token.utf8.count <= 4096,
            token.unicodeScalars.allSatisfy({ $0.isASCII && !PrintableText.isControl($0) })
        else {
            throw Unparseable(description: "voided purchase \(number) has no usable \"purchaseToken\"")
        }
        guard let voided = record["voidedTimeMillis"].flatMap(PlayPurchase.int64), voided >= 0 else {
            throw Unparseable(description: "voided purchase \(number) has no whole-number \"voidedTimeMillis\"")
        }
        func integer(_ key: String) throws(Unparseable) -> Int? {
            guard let value = record[key], value != .null else { return nil }
            guard let parsed = PlayPurchase.integer(value) else {
                throw Unparseable(description: "voided purchase \(number)'s \"\(key)\" is not a whole number")
            }
            return parsed
        }
        var purchase = PlayVoidedPurchase(purchaseToken: token, voidedTimeMilliseconds: voided)
        if let orderID = record["orderId"]?.stringValue, !orderID.isEmpty {
            guard orderID.utf8.count <= 128, orderID.unicodeScalars.allSatisfy({ $0.isASCII && !PrintableText.isControl($0) }) else {
                throw Unparseable(description: "voided purchase \(number)'s \"orderId\" is not a short printable string")
            }
            purchase.orderID = orderID
        }
        purchase.purchaseTimeMilliseconds = record["purchaseTimeMillis"].flatMap(PlayPurchase.int64)
        purchase.voidedSource = try integer("voidedSource")
        purchase.voidedReason = try integer("voidedReason")
        purchase.voidedQuantity = try integer("voidedQuantity")
        return purchase
    }
}
