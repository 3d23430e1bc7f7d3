import Foundation
import ReconcileCore
import ReconcileFoundation

/// A test receipt: base64 of a small JSON object that tells the mock what to answer. Tests build
/// receipts with it; the mock reads them back.
///
/// ```json
/// {"bundle_id": "com.example.app", "environment": "Production",
///  "items": [{"product_id": "gems", "transaction_id": "1000"}],
///  "statuses": [21005, 0], "merchant": "verified"}
/// ```
public struct MockReceipt: Sendable, Hashable {
    /// One purchase in the receipt.
    public struct Item: Sendable, Hashable {
        public var productID: String
        public var transactionID: String
        public var originalTransactionID: String?
        public var purchaseDateMilliseconds: Int64?
        public var cancellationDateMilliseconds: Int64?
        public var appAccountToken: String?
        public var quantity: Int

        public init(
            productID: String, transactionID: String, originalTransactionID: String? = nil,
            purchaseDateMilliseconds: Int64? = nil, cancellationDateMilliseconds: Int64? = nil,
            appAccountToken: String? = nil, quantity: Int = 1
        ) {
            self.productID = productID
            self.transactionID = transactionID
            self.originalTransactionID = originalTransactionID
            self.purchaseDateMilliseconds = purchaseDateMilliseconds
            self.cancellationDateMilliseconds = cancellationDateMilliseconds
            self.appAccountToken = appAccountToken
            self.quantity = quantity
        }
    }

    public var bundleID: String
    /// `Production` or `Sandbox`: the environment that will verify it.
    public var environment: String
    public var items: [Item]
    /// Apple statuses to answer, one per request for this receipt (the last repeats); empty
    /// means 0.
    public var statuses: [Int]
    /// The retryable flag for 211xx statuses, under the given spelling.
    public var isRetryable: Bool?
    /// Put items in `latest_receipt_info` instead of `in_app`.
    public var inLatestReceiptInfo: Bool
    /// The merchant endpoint's answers, one per request (the last repeats): `verified`,
    /// `rejected`, `pending`, `422`, `409`, `503`. Empty means `verified`.
    public var merchantAnswers: [String]

    public init(
        bundleID: String = "com.example.app", environment: String = "Production", items: [Item] = [], statuses: [Int] = [],
        isRetryable: Bool? = nil, inLatestReceiptInfo: Bool = false, merchantAnswers: [String] = []
    ) {
        self.bundleID = bundleID
        self.environment = environment
        self.items = items
        self.statuses = statuses
        self.isRetryable = isRetryable
        self.inLatestReceiptInfo = inLatestReceiptInfo
        self.merchantAnswers = merchantAnswers
    }

    /// The receipt as base64, for an order file.
    public var base64: String {
        var object = JSONObject()
        object["bundle_id"] = .string(bundleID)
        object["environment"] = .string(environment)
        object["items"] = .array(items.map { item in
            .object(JSONObject([
                "product_id": .string(item.productID), "transaction_id": .string(item.transactionID),
                "original_transaction_id": JSONValue.string(orNull: item.originalTransactionID),
                "purchase_date_ms": item.purchaseDateMilliseconds.map(JSONValue.integer),
                "cancellation_date_ms": item.cancellationDateMilliseconds.map(JSONValue.integer),
                "app_account_token": item.appAccountToken.map(JSONValue.string), "quantity": .integer(item.quantity),
            ]))
        })
        object["statuses"] = .array(statuses.map(JSONValue.integer))
        if let isRetryable { object["is_retryable"] = .bool(isRetryable) }
        if inLatestReceiptInfo { object["latest"] = .bool(true) }
        object["merchant"] = .array(merchantAnswers.map(JSONValue.string))
        return Data(JSONWriter.bytes(.object(object))).base64EncodedString()
    }

    /// Reads a receipt back; `nil` for one that is not a mock receipt.
    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters),
            case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(Array(data))
        else { return nil }
        bundleID = object["bundle_id"]?.stringValue ?? "com.example.app"
        environment = object["environment"]?.stringValue ?? "Production"
        items = (object["items"]?.arrayValue ?? []).compactMap { value in
            guard let item = value.objectValue, let product = item["product_id"]?.stringValue,
                let transaction = item["transaction_id"]?.stringOrNumberText
            else { return nil }
            return Item(
                productID: product, transactionID: transaction,
                originalTransactionID: item["original_transaction_id"]?.stringOrNumberText,
                purchaseDateMilliseconds: item["purchase_date_ms"]?.int64Value,
                cancellationDateMilliseconds: item["cancellation_date_ms"]?.int64Value,
                appAccountToken: item["app_account_token"]?.stringValue,
                quantity: item["quantity"]?.int64Value.map(Int.init) ?? 1)
        }
        statuses = (object["statuses"]?.arrayValue ?? []).compactMap { $0.int64Value.map(Int.init) }
        isRetryable = object["is_retryable"]?.boolValue
        inLatestReceiptInfo = object["latest"]?.boolValue ?? false
        merchantAnswers = (object["merchant"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}
