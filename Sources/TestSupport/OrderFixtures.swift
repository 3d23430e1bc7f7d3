import Foundation

/// Order files for tests.
public enum OrderFixtures {
    /// A valid order file's JSON text.
    public static func orderJSON(
        _ orderID: String, product: String = "com.example.gems", receipt: String? = "QUJDRA==",
        transactionID: String? = nil, extra: String = ""
    ) -> String {
        var members = ["\"order_id\":\"\(orderID)\"", "\"product_id\":\"\(product)\""]
        if let receipt { members.append("\"receipt\":\"\(receipt)\"") }
        if let transactionID { members.append("\"transaction_id\":\"\(transactionID)\"") }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ",") + "}"
    }
}
