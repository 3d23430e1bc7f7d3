import Foundation
import ReconcileCore
import ReconcileFoundation

/// What the mock has seen: requests per endpoint and per second, per receipt, grant and delivery
/// requests per `Idempotency-Key`, and whether any key ever differed from its order id; revocation
/// notices per `Idempotency-Key`, with the last body and the keys each order's notices carried;
/// Pub/Sub pulls, and deliveries and acknowledgements per `messageId` (``MockPubSub``).
public struct MockStats: Sendable, Hashable {
    public var requests = 0
    public var byEndpoint: [String: Int] = [:]
    /// Requests per endpoint per whole second (Unix time).
    public var perSecond: [String: [Int: Int]] = [:]
    /// Requests per receipt (keyed by a short fingerprint, never the receipt).
    public var perReceipt: [String: Int] = [:]
    /// Merchant grant requests per Idempotency-Key.
    public var grantRequests: [String: Int] = [:]
    /// Grants answered "verified", per order id.
    public var grantsSucceeded: [String: Int] = [:]
    public var deliveries: [String: Int] = [:]
    public var deliveriesSucceeded: [String: Int] = [:]
    /// Requests whose Idempotency-Key was missing or not their order id.
    public var idempotencyMismatches = 0
    /// The Reconcile-Attempt values seen per key.
    public var attemptHeaders: [String: [String]] = [:]
    /// What the last delivery of each order said: its `store`, `transaction_id` and
    /// `package_name` (Google Play).
    public var deliveredStores: [String: String] = [:]
    public var deliveredTransactions: [String: String] = [:]
    public var deliveredPackages: [String: String] = [:]
    /// The `origin` the last delivery of each order named (`store`, `operator`; absent for a
    /// phone's order).
    public var deliveredOrigins: [String: String] = [:]
    /// Merchant requests that carried a purchase token, per order id: the token's fingerprint.
    public var merchantPurchaseTokens: [String: String] = [:]
    /// Revocation notices received per Idempotency-Key (every one that reached the endpoint,
    /// whatever it was answered), and those answered 2xx.
    public var revocations: [String: Int] = [:]
    public var revocationsSucceeded: [String: Int] = [:]
    /// The last notice's body per Idempotency-Key, as it came.
    public var revocationBodies: [String: JSONValue] = [:]
    /// The Idempotency-Keys each order's notices carried, in the order received.
    public var revocationKeys: [String: [String]] = [:]
    /// The Idempotency-Keys of each order's notices the endpoint took (answered 2xx, whether or
    /// not the answer reached the daemon), in the order taken: the merchant's last word is the
    /// last of them.
    public var revocationsTaken: [String: [String]] = [:]
    /// Notices whose Content-Type was not `application/json`.
    public var revocationContentTypeMismatches = 0
    /// Pub/Sub `:pull` requests past authentication (answered with messages, `{}` or an error).
    public var pubsubPulls = 0
    /// Times each Pub/Sub message was delivered, per `messageId`.
    public var pubsubDelivered: [String: Int] = [:]
    /// Pub/Sub messages acknowledged (with their latest delivery's `ackId`), per `messageId`.
    public var pubsubAcknowledged: [String: Int] = [:]

    public init() {}

    mutating func record(endpoint: String, at time: Date) {
        requests += 1
        byEndpoint[endpoint, default: 0] += 1
        perSecond[endpoint, default: [:]][Int(time.timeIntervalSince1970), default: 0] += 1
    }

    /// Counts a request for a receipt; returns how many there have been for it.
    mutating func countReceipt(_ receipt: String) -> Int {
        let key = Self.fingerprint(receipt)
        perReceipt[key, default: 0] += 1
        return perReceipt[key]!
    }

    mutating func countGrantRequest(key: String?, orderID: String, attempt: String?) -> Int {
        if key != orderID { idempotencyMismatches += 1 }
        grantRequests[orderID, default: 0] += 1
        if let attempt { attemptHeaders[orderID, default: []].append(attempt) }
        return grantRequests[orderID]!
    }

    mutating func grantSucceeded(orderID: String) {
        grantsSucceeded[orderID, default: 0] += 1
    }

    mutating func countDelivery(
        key: String?, orderID: String, succeeded: Bool, store: String? = nil, transactionID: String? = nil, packageName: String? = nil,
        origin: String? = nil
    ) {
        if let origin { deliveredOrigins[orderID] = origin }
        if key != orderID { idempotencyMismatches += 1 }
        deliveries[orderID, default: 0] += 1
        if succeeded { deliveriesSucceeded[orderID, default: 0] += 1 }
        if let store { deliveredStores[orderID] = store }
        if let transactionID { deliveredTransactions[orderID] = transactionID }
        if let packageName { deliveredPackages[orderID] = packageName }
    }

    mutating func countRevocation(key: String, orderID: String, body: JSONObject, contentType: String?, succeeded: Bool) {
        revocations[key, default: 0] += 1
        if succeeded {
            revocationsSucceeded[key, default: 0] += 1
            revocationsTaken[orderID, default: []].append(key)
        }
        revocationBodies[key] = .object(body)
        revocationKeys[orderID, default: []].append(key)
        if contentType?.lowercased().hasPrefix("application/json") != true { revocationContentTypeMismatches += 1 }
    }

    /// A short, stable fingerprint (FNV-1a 64) of a receipt: counts are keyed by it.
    public static func fingerprint(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    var json: JSONValue {
        func counts(_ dictionary: [String: Int]) -> JSONValue {
            .object(JSONObject(dictionary.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: .integer($0.value)) }))
        }
        func texts(_ dictionary: [String: String]) -> JSONValue {
            .object(JSONObject(dictionary.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: .string($0.value)) }))
        }
        var seconds = JSONObject()
        for (endpoint, table) in perSecond.sorted(by: { $0.key < $1.key }) {
            seconds[endpoint] = counts(Dictionary(uniqueKeysWithValues: table.map { (String($0.key), $0.value) }))
        }
        var attempts = JSONObject()
        for (key, values) in attemptHeaders.sorted(by: { $0.key < $1.key }) {
            attempts[key] = .array(values.map(JSONValue.string))
        }
        return .object(JSONObject([
            "requests": .integer(requests), "by_endpoint": counts(byEndpoint), "per_second": .object(seconds),
            "per_receipt": counts(perReceipt), "grant_requests": counts(grantRequests), "grants_succeeded": counts(grantsSucceeded),
            "deliveries": counts(deliveries), "deliveries_succeeded": counts(deliveriesSucceeded),
            "idempotency_mismatches": .integer(idempotencyMismatches), "attempt_headers": .object(attempts),
            "delivered_stores": texts(deliveredStores), "delivered_transactions": texts(deliveredTransactions),
            "delivered_packages": texts(deliveredPackages), "delivered_origins": texts(deliveredOrigins),
            "merchant_purchase_tokens": texts(merchantPurchaseTokens),
            "revocations": counts(revocations), "revocations_succeeded": counts(revocationsSucceeded),
            "revocation_bodies": .object(JSONObject(revocationBodies.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: $0.value) })),
            "revocation_keys": .object(JSONObject(revocationKeys.sorted { $0.key < $1.key }.map {
                JSONObject.Member(key: $0.key, value: .array($0.value.map(JSONValue.string)))
            })),
            "revocations_taken": .object(JSONObject(revocationsTaken.sorted { $0.key < $1.key }.map {
                JSONObject.Member(key: $0.key, value: .array($0.value.map(JSONValue.string)))
            })),
            "revocation_content_type_mismatches": .integer(revocationContentTypeMismatches),
            "pubsub_pulls": .integer(pubsubPulls), "pubsub_delivered": counts(pubsubDelivered),
            "pubsub_acknowledged": counts(pubsubAcknowledged),
        ]))
    }

    /// Reads stats back from their JSON (for tests that query a mock process).
    public init(json: JSONValue) {
        func counts(_ value: JSONValue?) -> [String: Int] {
            Dictionary(uniqueKeysWithValues: (value?.objectValue?.members ?? []).map { ($0.key, Int($0.value.int64Value ?? 0)) })
        }
        requests = Int(json["requests"]?.int64Value ?? 0)
        byEndpoint = counts(json["by_endpoint"])
        for member in json["per_second"]?.objectValue?.members ?? [] {
            perSecond[member.key] = Dictionary(uniqueKeysWithValues: counts(member.value).compactMap { key, value in Int(key).map { ($0, value) } })
        }
        perReceipt = counts(json["per_receipt"])
        grantRequests = counts(json["grant_requests"])
        grantsSucceeded = counts(json["grants_succeeded"])
        deliveries = counts(json["deliveries"])
        deliveriesSucceeded = counts(json["deliveries_succeeded"])
        idempotencyMismatches = Int(json["idempotency_mismatches"]?.int64Value ?? 0)
        for member in json["attempt_headers"]?.objectValue?.members ?? [] {
            attemptHeaders[member.key] = member.value.arrayValue?.compactMap(\.stringValue) ?? []
        }
        func texts(_ value: JSONValue?) -> [String: String] {
            Dictionary(uniqueKeysWithValues: (value?.objectValue?.members ?? []).compactMap { member in member.value.stringValue.map { (member.key, $0) } })
        }
        deliveredStores = texts(json["delivered_stores"])
        deliveredTransactions = texts(json["delivered_transactions"])
        deliveredPackages = texts(json["delivered_packages"])
        deliveredOrigins = texts(json["delivered_origins"])
        merchantPurchaseTokens = texts(json["merchant_purchase_tokens"])
        revocations = counts(json["revocations"])
        revocationsSucceeded = counts(json["revocations_succeeded"])
        for member in json["revocation_bodies"]?.objectValue?.members ?? [] { revocationBodies[member.key] = member.value }
        for member in json["revocation_keys"]?.objectValue?.members ?? [] {
            revocationKeys[member.key] = member.value.arrayValue?.compactMap(\.stringValue) ?? []
        }
        for member in json["revocations_taken"]?.objectValue?.members ?? [] {
            revocationsTaken[member.key] = member.value.arrayValue?.compactMap(\.stringValue) ?? []
        }
        revocationContentTypeMismatches = Int(json["revocation_content_type_mismatches"]?.int64Value ?? 0)
        pubsubPulls = Int(json["pubsub_pulls"]?.int64Value ?? 0)
        pubsubDelivered = counts(json["pubsub_delivered"])
        pubsubAcknowledged = counts(json["pubsub_acknowledged"])
    }
}
