import ReconcileFoundation

/// Google Play's `ProductPurchase` (`purchases.products.get`, androidpublisher v3;
/// `docs/protocols/google-play.md` §2.1), reduced to what the daemon decides on.
///
/// Lenient where Google is: int64 values come as strings and int32 ones as numbers, and either
/// is accepted as the other. Strict where the verdict rests: `purchaseState` must be there, a
/// whole number, and named once.
public struct PlayPurchase: Sendable, Hashable {
    /// 0 purchased, 1 cancelled, 2 pending.
    public var purchaseState: Int
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    /// Set only outside the standard flow: 0 test (license tester), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    /// `GPA.…`; promo-code purchases have none.
    public var orderID: String?
    /// Absent means 1.
    public var quantity: Int
    public var purchaseTimeMilliseconds: Int64?
    /// Set when the app passed it in `BillingFlowParams`.
    public var obfuscatedExternalAccountID: String?
    /// The profile within that account, when the app passed one.
    public var obfuscatedExternalProfileID: String?
    /// "May not be present".
    public var productID: String?
    public var regionCode: String?

    public init(
        purchaseState: Int, consumptionState: Int? = nil, acknowledgementState: Int? = nil, purchaseType: Int? = nil,
        orderID: String? = nil, quantity: Int = 1, purchaseTimeMilliseconds: Int64? = nil, obfuscatedExternalAccountID: String? = nil,
        productID: String? = nil, regionCode: String? = nil
    ) {
        self.purchaseState = purchaseState
        self.consumptionState = consumptionState
        self.acknowledgementState = acknowledgementState
        self.purchaseType = purchaseType
        self.orderID = orderID
        self.quantity = quantity
        self.purchaseTimeMilliseconds = purchaseTimeMilliseconds
        self.obfuscatedExternalAccountID = obfuscatedExternalAccountID
        self.productID = productID
        self.regionCode = regionCode
    }

    public static let purchased = 0
    public static let cancelled = 1
    public static let pending = 2

    /// A license tester's purchase (`purchaseType` 0): nobody was charged.
    public var isTest: Bool { purchaseType == 0 }
    /// Google says it is acknowledged (consumed purchases are acknowledged too).
    public var isAcknowledged: Bool { acknowledgementState == 1 || consumptionState == 1 }
    public var isConsumed: Bool { consumptionState == 1 }

    /// Why a body is not a purchase.
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a `ProductPurchase` body.
    public static func parse(_ body: [UInt8]) throws(Unparseable) -> PlayPurchase {
        let document: JSONValue
        do {
            document = try JSONParser(allowsDuplicateKeys: true).parse(body)
        } catch {
            throw Unparseable(description: "the purchase is not JSON (\(error.message))")
        }
        guard case .object(let object) = document else {
            throw Unparseable(description: "the purchase is a JSON \(document.typeName), not an object")
        }
        // The verdict rests on these: named twice, which one counts is anyone's guess.
        for key in [
            "purchaseState", "orderId", "purchaseType", "obfuscatedExternalAccountId", "obfuscatedExternalProfileId", "acknowledgementState",
            "consumptionState",
        ]
        where object.members.count(where: { $0.key == key }) > 1 {
            throw Unparseable(description: "the purchase names \"\(key)\" more than once")
        }
        guard let stateValue = object["purchaseState"], let state = integer(stateValue) else {
            throw Unparseable(description: "the purchase has no numeric \"purchaseState\"")
        }
        var purchase = PlayPurchase(purchaseState: state)
        purchase.consumptionState = try optionalInteger(object, "consumptionState")
        purchase.acknowledgementState = try optionalInteger(object, "acknowledgementState")
        purchase.purchaseType = try optionalInteger(object, "purchaseType")
        purchase.orderID = try optionalText(object, "orderId")
        if let quantity = try optionalInteger(object, "quantity") {
            guard quantity >= 1 else { throw Unparseable(description: "the purchase's \"quantity\" is \(quantity)") }
            purchase.quantity = quantity
        }
        if let time = object["purchaseTimeMillis"], time != .null {
            guard let milliseconds = int64(time) else { throw Unparseable(description: "the purchase's \"purchaseTimeMillis\" is not a whole number") }
            purchase.purchaseTimeMilliseconds = milliseconds
        }
        purchase.obfuscatedExternalAccountID = try optionalText(object, "obfuscatedExternalAccountId")
        purchase.obfuscatedExternalProfileID = try optionalText(object, "obfuscatedExternalProfileId")
        purchase.productID = try optionalText(object, "productId")
        purchase.regionCode = try optionalText(object, "regionCode")
        return purchase
    }

    /// What the order's history shows of the answer: state, acknowledgement, consumption and the
    /// order id (never the token).
    public var summary: String {
        var parts = ["orderId \(orderID.map { PrintableText.excerpt($0, maximumScalars: 64) } ?? "none")"]
        parts.append("purchaseState \(purchaseState) (\(Self.stateName(purchaseState)))")
        parts.append("acknowledgementState \(acknowledgementState.map(String.init) ?? "-")")
        parts.append("consumptionState \(consumptionState.map(String.init) ?? "-")")
        if let purchaseType { parts.append("purchaseType \(purchaseType)\(purchaseType == 0 ? " (test)" : "")") }
        return parts.joined(separator: ", ")
    }

    static func stateName(_ state: Int) -> String {
        switch state {
        case purchased: "purchased"
        case cancelled: "cancelled"
        case pending: "pending"
        default: "unknown"
        }
    }

    // MARK: - Values

    /// A whole number given as a JSON number or a string of digits (int32 fields).
    static func integer(_ value: JSONValue) -> Int? {
        guard let wide = int64(value), let narrow = Int32(exactly: wide) else { return nil }
        return Int(narrow)
    }

    /// A whole number given as a string of digits or a JSON number (int64 fields).
    static func int64(_ value: JSONValue) -> Int64? {
        switch value {
        case .number(let text), .string(let text): Int64(text)
        default: nil
        }
    }

    static func optionalInteger(_ object: JSONObject, _ key: String) throws(Unparseable) -> Int? {
        guard let value = object[key], value != .null else { return nil }
        guard let number = integer(value) else { throw Unparseable(description: "the purchase's \"\(key)\" is not a whole number") }
        return number
    }

    static func optionalText(_ object: JSONObject, _ key: String) throws(Unparseable) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard let text = value.stringValue else { throw Unparseable(description: "the purchase's \"\(key)\" is not a string") }
        return text.isEmpty ? nil : text
    }
}
