import ReconcileFoundation

/// Apple's `verifyReceipt` answer body, reduced to what the daemon decides on
/// (`docs/protocols/apple.md` §1.2–1.4).
///
/// Lenient where Apple is inconsistent: ids and dates come as numbers or strings, the retryable
/// flag is spelled `is_retryable` or `is-retryable` and is a boolean or 0/1, and iOS 6-style
/// receipts carry their one item in the receipt itself.
public struct AppleReceiptAnswer: Sendable, Hashable {
    public var status: Int
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// `receipt.bundle_id` (or `bid` for iOS 6-style receipts).
    public var bundleID: String?
    /// Whether the answer carries a `receipt` object at all.
    public var hasReceipt: Bool
    /// Items of `receipt.in_app` and `latest_receipt_info`, in that order.
    public var items: [AppleReceiptItem]
    /// The 211xx retryable flag, when present.
    public var isRetryable: Bool?

    public init(
        status: Int, environment: String? = nil, bundleID: String? = nil, hasReceipt: Bool = false,
        items: [AppleReceiptItem] = [], isRetryable: Bool? = nil
    ) {
        self.status = status
        self.environment = environment
        self.bundleID = bundleID
        self.hasReceipt = hasReceipt
        self.items = items
        self.isRetryable = isRetryable
    }

    /// Why a body is not an answer.
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses an answer body.
    public static func parse(_ body: [UInt8]) throws(Unparseable) -> AppleReceiptAnswer {
        let document: JSONValue
        do {
            document = try JSONParser(allowsDuplicateKeys: true).parse(body)
        } catch {
            throw Unparseable(description: "the answer is not JSON (\(error.message))")
        }
        guard case .object(let object) = document else {
            throw Unparseable(description: "the answer is a JSON \(document.typeName), not an object")
        }
        // Duplicate keys are tolerated, but not in the two the verdict rests on: with two
        // "status" or two "receipt" members, which one counts is anyone's guess (we read the
        // first, most parsers the last), and an ambiguous answer is never taken as success.
        for key in ["status", "receipt"] where object.members.count(where: { $0.key == key }) > 1 {
            throw Unparseable(description: "the answer names \"\(key)\" more than once")
        }
        guard let statusValue = object["status"], let status = integer(statusValue) else {
            throw Unparseable(description: "the answer has no numeric \"status\"")
        }
        var answer = AppleReceiptAnswer(status: status, environment: object["environment"]?.stringValue)
        answer.isRetryable = (object["is_retryable"] ?? object["is-retryable"]).flatMap(flag)
        if case .object(let receipt)? = object["receipt"] {
            answer.hasReceipt = true
            answer.bundleID = receipt["bundle_id"]?.stringValue ?? receipt["bid"]?.stringValue
            if case .array(let inApp)? = receipt["in_app"] {
                answer.items += inApp.compactMap { $0.objectValue.flatMap(AppleReceiptItem.init(object:)) }
            } else if let single = AppleReceiptItem(object: receipt) {
                // iOS 6-style transaction receipt: the receipt is the item.
                answer.items.append(single)
            }
        }
        switch object["latest_receipt_info"] {
        case .array(let latest)?:
            answer.items += latest.compactMap { $0.objectValue.flatMap(AppleReceiptItem.init(object:)) }
        case .object(let latest)?:
            if let item = AppleReceiptItem(object: latest) { answer.items.append(item) }
        default:
            break
        }
        return answer
    }

    static func integer(_ value: JSONValue) -> Int? {
        switch value {
        case .number(let text): Int(text)
        case .string(let text): Int(text)
        default: nil
        }
    }

    static func flag(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let flag): flag
        case .number(let text): text == "1" ? true : (text == "0" ? false : nil)
        case .string(let text):
            ["true", "1"].contains(text.lowercased()) ? true : (["false", "0"].contains(text.lowercased()) ? false : nil)
        default: nil
        }
    }
}

/// One purchase in a receipt.
public struct AppleReceiptItem: Sendable, Hashable {
    public var productID: String
    public var transactionID: String
    public var originalTransactionID: String?
    public var quantity: Int
    public var purchaseDateMilliseconds: Int64?
    /// Set when Apple refunded or revoked it.
    public var cancellationDateMilliseconds: Int64?
    /// `app_account_token`: the UUID the app passed as applicationUsername.
    public var appAccountToken: String?
    /// A subscription renewal (or, in a verifyReceipt answer, a restore): never an order's own
    /// purchase, which is the initial one only (DESIGN §5).
    public var isRenewal: Bool

    public init(
        productID: String, transactionID: String, originalTransactionID: String? = nil, quantity: Int = 1,
        purchaseDateMilliseconds: Int64? = nil, cancellationDateMilliseconds: Int64? = nil, appAccountToken: String? = nil,
        isRenewal: Bool? = nil
    ) {
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.quantity = quantity
        self.purchaseDateMilliseconds = purchaseDateMilliseconds
        self.cancellationDateMilliseconds = cancellationDateMilliseconds
        self.appAccountToken = appAccountToken
        self.isRenewal = isRenewal ?? Self.differs(originalTransactionID, from: transactionID)
    }

    public var isCancelled: Bool { cancellationDateMilliseconds != nil }

    /// Reads an item; `nil` without a product id or transaction id.
    init?(object: JSONObject) {
        guard let productID = object["product_id"]?.stringOrNumberText,
            let transactionID = object["transaction_id"]?.stringOrNumberText
        else { return nil }
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = object["original_transaction_id"]?.stringOrNumberText
        self.quantity = object["quantity"].flatMap(AppleReceiptAnswer.integer) ?? 1
        self.purchaseDateMilliseconds = object["purchase_date_ms"]?.stringOrNumberText.flatMap(Self.milliseconds)
        let cancellation = object["cancellation_date_ms"]?.stringOrNumberText.flatMap(Self.milliseconds)
        // Some answers carry only the formatted cancellation_date: still a cancellation.
        self.cancellationDateMilliseconds = cancellation ?? (object["cancellation_date"]?.stringValue != nil ? 0 : nil)
        self.appAccountToken = object["app_account_token"]?.stringValue
        self.isRenewal = Self.differs(originalTransactionID, from: transactionID)
    }

    /// verifyReceipt's rule for a renewal: `original_transaction_id` present and not the item's
    /// own `transaction_id` (Apple: they differ only for renewals and restores).
    static func differs(_ original: String?, from transactionID: String) -> Bool {
        guard let original, !original.isEmpty else { return false }
        return original != transactionID
    }

    /// Milliseconds as Apple writes them: digits, sometimes with a fraction (Xcode). A value
    /// beyond Int64 is no date at all (`nil`): converting it would trap.
    static func milliseconds(_ text: String) -> Int64? {
        if let whole = Int64(text) { return whole }
        return Double(text).flatMap { Int64(exactly: $0.rounded(.towardZero)) }
    }
}
