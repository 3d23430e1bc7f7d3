import ReconcileFoundation

/// The App Store Server API's answer bodies around signed transactions.
public enum AppStoreDocument {
    /// Get Transaction Info: `{"signedTransactionInfo": "<JWS>"}`.
    public static func signedTransactionInfo(_ body: [UInt8]) throws(AppStoreTransaction.Unparseable) -> String {
        let object = try self.object(body, what: "transaction info answer")
        guard let jws = object["signedTransactionInfo"]?.stringValue, !jws.isEmpty else {
            throw AppStoreTransaction.Unparseable(description: "the answer has no \"signedTransactionInfo\"")
        }
        return jws
    }

    /// One page of Get Transaction History v2.
    public struct HistoryPage: Sendable, Hashable {
        public var signedTransactions: [String]
        public var revision: String?
        public var hasMore: Bool
        public var environment: String?
        public var bundleID: String?
        public var appAppleID: String?
    }

    public static func historyPage(_ body: [UInt8]) throws(AppStoreTransaction.Unparseable) -> HistoryPage {
        let object = try self.object(body, what: "transaction history answer")
        guard case .array(let values)? = object["signedTransactions"] else {
            throw AppStoreTransaction.Unparseable(description: "the history answer has no \"signedTransactions\" array")
        }
        var transactions: [String] = []
        for value in values {
            guard let jws = value.stringValue else {
                throw AppStoreTransaction.Unparseable(description: "a history entry is not a string")
            }
            transactions.append(jws)
        }
        let hasMore: Bool
        switch object["hasMore"] {
        case .bool(let flag)?: hasMore = flag
        case nil, .null?: hasMore = false
        default: throw AppStoreTransaction.Unparseable(description: "the history answer's \"hasMore\" is not a boolean")
        }
        let revision = object["revision"]?.stringValue
        if hasMore && (revision ?? "").isEmpty {
            throw AppStoreTransaction.Unparseable(description: "the history answer has more pages but no \"revision\"")
        }
        return HistoryPage(
            signedTransactions: transactions, revision: revision, hasMore: hasMore, environment: object["environment"]?.stringValue,
            bundleID: object["bundleId"]?.stringValue, appAppleID: identifier(object["appAppleId"]))
    }

    /// Look Up Order ID (`OrderLookupResponse`): the signed transactions of a customer's order.
    /// Neither `status` alone is believed — Apple's own library has a fixture with status 1 and
    /// transactions — so the transactions are returned whatever it says; the caller verifies each
    /// and takes "none verified" as "no such order". An answer without a numeric `status` is
    /// not one.
    public static func orderLookup(_ body: [UInt8]) throws(AppStoreTransaction.Unparseable) -> [String] {
        let object = try self.object(body, what: "order look-up answer")
        guard object["status"]?.int64Value != nil else {
            throw AppStoreTransaction.Unparseable(description: "the order look-up answer has no numeric \"status\"")
        }
        guard let values = object["signedTransactions"], values != .null else { return [] }
        guard case .array(let list) = values else {
            throw AppStoreTransaction.Unparseable(description: "the order look-up answer's \"signedTransactions\" is not an array")
        }
        guard list.count <= 1000 else {
            throw AppStoreTransaction.Unparseable(description: "the order look-up answer holds \(list.count) transactions (at most 1000 are read)")
        }
        return try list.map { (value) throws(AppStoreTransaction.Unparseable) -> String in
            guard let jws = value.stringValue, !jws.isEmpty else {
                throw AppStoreTransaction.Unparseable(description: "an order look-up entry is not a signed transaction string")
            }
            return jws
        }
    }

    static func object(_ bytes: [UInt8], what: String) throws(AppStoreTransaction.Unparseable) -> JSONObject {
        let document: JSONValue
        do {
            document = try JSONParser(allowsDuplicateKeys: false).parse(bytes)
        } catch {
            throw AppStoreTransaction.Unparseable(description: "the \(what) is not JSON (\(error.message))")
        }
        guard case .object(let object) = document else {
            throw AppStoreTransaction.Unparseable(description: "the \(what) is a JSON \(document.typeName), not an object")
        }
        return object
    }

    /// An id given as a string of digits or a number.
    static func identifier(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)? where !text.isEmpty: text
        case .number(let text)? where text.allSatisfy(\.isNumber): text
        default: nil
        }
    }

    /// Milliseconds as a number (fraction dropped) or a string of digits.
    static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let text)?, .string(let text)?:
            if let whole = Int64(text) { return whole }
            guard let number = Double(text), number.isFinite, abs(number) < 9e15 else { return nil }
            return Int64(number.rounded(.down))
        default:
            return nil
        }
    }
}
