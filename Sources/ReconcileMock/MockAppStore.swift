import Foundation
import ReconcileCore
import ReconcileCrypto
import Synchronization
import ReconcileFoundation

/// The App Store Server API as the mock plays it (`Kind=appstore`): Get Transaction Info and Get
/// Transaction History v2 for the transactions a test registered, each answer a JWS signed with
/// the test chain the mock was given, every request's bearer JWT checked with the test key.
///
/// | path (under `/appstore/production` or `/appstore/sandbox`) | answer |
/// |---|---|
/// | `GET /inApps/v1/transactions/{id}` | `{"signedTransactionInfo": …}`, or 404 4040010 |
/// | `GET /inApps/v2/history/{id}?revision=N` | pages of `pageSize`, or 404 4040010 |
///
/// | `POST /inApps/v1/notifications/history[?paginationToken=…]` | the registered notifications signed in `[startDate, endDate)`, 20 a page |
/// | `PUT /inApps/v2/transactions/consumption/{id}` | Send Consumption Information: the body checked as Apple does, recorded, 202 |
/// | `GET /inApps/v1/lookup/{orderId}` | Look Up Order ID (production only; the sandbox answers 404): `{"status": 0, "signedTransactions": …}` for a registered order, `{"status": 1}` for another |
///
/// `POST /_mock/appstore/orders` registers customers' orders for Look Up Order ID:
/// `{"orders": [{"orderId": "MK5TTV4XYZ", "transactionIds": [...], "status": 429, "retryAfter": 2}]}`
/// — the production transactions registered under those ids are signed into the answer as they
/// are registered when it is asked; `status` (and `retryAfter`) script an error answer instead.
///
/// `POST /_mock/appstore/notifications` registers notifications (what Apple would answer Get
/// Notification History with, whether or not it reached the merchant's web handler):
/// `{"environment": …, "notifications": [{notificationUUID, notificationType, …, "data":
/// {"transactionInfo": {payload fields}}}…]}`; the mock signs `transactionInfo` (as a transaction)
/// into `data.signedTransactionInfo`, adds `bundleId`, `environment` and `signedDate` where left
/// out, and signs the whole as each `signedPayload` (one with `summary`, `appData` or
/// `externalPurchaseToken` instead of `data` is signed as given, apart from `signedDate`).
///
/// `POST /_mock/appstore/transactions` registers transactions:
/// `{"environment": "Production"|"Sandbox", "transactions": [{payload fields}…]}`; the mock adds
/// `bundleId`, `environment` and `signedDate` where a payload leaves them out.
public final class MockAppStore: Sendable {
    /// What the mock signs with and checks tokens against.
    public struct Settings: Sendable {
        /// Signs the answers (leaf key and leaf, intermediate, root certificates).
        public var signer: JWSSigner
        /// The public half of the In-App Purchase key the daemon signs its tokens with.
        public var tokenKey: ES256PublicKey
        public var bundleID: String
        /// Transactions per history page (Apple's is 20; small in tests, to page).
        public var pageSize = 2
        /// Notifications per Get Notification History page (Apple's: 20).
        public var notificationPageSize = 20

        public init(signer: JWSSigner, tokenKey: ES256PublicKey, bundleID: String) {
            self.signer = signer
            self.tokenKey = tokenKey
            self.bundleID = bundleID
        }
    }

    let settings: Settings
    /// Registered payloads by environment, in registration order.
    private let transactions = Mutex<[String: [JSONObject]]>([:])
    /// Registered notification payloads (decoded, `signedTransactionInfo` already signed) by
    /// environment, in registration order.
    private let notifications = Mutex<[String: [JSONObject]]>([:])

    /// Customers' orders for Look Up Order ID, by order id.
    private let orders = Mutex<[String: CustomerOrder]>([:])
    /// Look Up Order ID requests, by order id.
    private let lookups = Mutex<[String: Int]>([:])

    /// One registered customer's order.
    struct CustomerOrder {
        var transactionIDs: [String]
        var status: Int?
        var retryAfter: Int?
    }

    /// The consumption answers accepted, in order (`GET /_mock/stats`, `"appstore"`).
    private let consumption = Mutex<[ConsumptionAnswer]>([])

    public init(settings: Settings) {
        self.settings = settings
    }

    /// One accepted Send Consumption Information request.
    public struct ConsumptionAnswer: Sendable, Hashable {
        public var environment: String
        public var transactionID: String
        public var deliveryStatus: String
        public var refundPreference: String?
        public var sampleContentProvided: Bool

        var json: JSONValue {
            .object(JSONObject([
                "environment": .string(environment), "transaction_id": .string(transactionID), "delivery_status": .string(deliveryStatus),
                "refund_preference": .string(orNull: refundPreference), "sample_content_provided": .bool(sampleContentProvided),
            ]))
        }
    }

    /// The consumption answers accepted so far.
    public var consumptionAnswers: [ConsumptionAnswer] { consumption.withLock { $0 } }

    /// Look Up Order ID requests so far, by order id.
    public var lookupCounts: [String: Int] { lookups.withLock { $0 } }

    /// What the mock has seen, for `GET /_mock/stats`: `{"consumption_answers": [...], "lookups": {orderId: count}}`.
    public var statsJSON: JSONValue {
        let counts = JSONObject(lookupCounts.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: .integer($0.value)) })
        return .object(JSONObject(["consumption_answers": .array(consumptionAnswers.map(\.json)), "lookups": .object(counts)]))
    }

    /// `POST /_mock/appstore/orders`.
    func registerOrders(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body), case .array(let list)? = object["orders"] else {
            return .json(400, .object(JSONObject(["error": .string("expected {\"orders\": [{\"orderId\", \"transactionIds\"}...]}")])))
        }
        var registered: [(String, CustomerOrder)] = []
        for value in list {
            guard case .object(let fields) = value, let id = fields["orderId"]?.stringValue, !id.isEmpty else {
                return .json(400, .object(JSONObject(["error": .string("each order needs a string orderId")])))
            }
            let ids = (fields["transactionIds"]?.arrayValue ?? []).compactMap(\.stringValue)
            registered.append((id, CustomerOrder(
                transactionIDs: ids, status: fields["status"]?.int64Value.map(Int.init), retryAfter: fields["retryAfter"]?.int64Value.map(Int.init))))
        }
        orders.withLock { orders in
            for (id, order) in registered { orders[id] = order }
        }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    /// Look Up Order ID: production only, as Apple serves it.
    func lookUpOrder(_ orderID: String, environment: String) -> ServerReply {
        lookups.withLock { $0[orderID, default: 0] += 1 }
        guard environment == "Production" else {
            return Self.error(404, 4040000, "This endpoint isn't available in the sandbox environment.")
        }
        guard let order = orders.withLock({ $0[orderID] }) else {
            return .json(200, .object(JSONObject(["status": .integer(1)])))
        }
        if let status = order.status {
            var reply = status == 429 ? Self.error(429, 4290000, "Rate limit exceeded.") : Self.error(status, status * 10_000, "Scripted answer \(status).")
            if let after = order.retryAfter { reply.headers.append(HTTPHeader("Retry-After", String(after))) }
            return reply
        }
        let known = transactions.withLock { $0["Production"] ?? [] }
        var signed: [JSONValue] = []
        for id in order.transactionIDs {
            guard let payload = known.first(where: { $0["transactionId"]?.stringValue == id }), let jws = sign(payload) else { continue }
            signed.append(.string(jws))
        }
        return .json(200, .object(JSONObject(["status": .integer(0), "signedTransactions": .array(signed)])))
    }

    /// Send Consumption Information v2: a `ConsumptionRequest` checked as Apple documents it
    /// (`customerConsented` true, else 4000035; `deliveryStatus` one of five, else 4000036;
    /// `sampleContentProvided` a boolean, else 4000041; `refundPreference`, if there, one of
    /// three; `consumptionPercentage`, if there, 0–100000), recorded and answered 202.
    func sendConsumption(_ request: ServerRequest, transactionID: String, environment: String) -> ServerReply {
        guard !transactionID.isEmpty else { return Self.error(400, 4000006, "Invalid transaction id.") }
        guard case .object(let body)? = try? JSONParser().parse(request.body) else { return Self.error(400, 4000000, "Invalid request.") }
        guard case .bool(true)? = body["customerConsented"] else {
            return Self.error(400, 4000035, "Invalid request. The customer consented field is invalid.")
        }
        let statuses = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard let status = body["deliveryStatus"]?.stringValue, statuses.contains(status) else {
            return Self.error(400, 4000036, "Invalid request. The delivery status field is invalid.")
        }
        guard case .bool(let sample)? = body["sampleContentProvided"] else {
            return Self.error(400, 4000041, "Invalid request. The sample content provided field is invalid.")
        }
        var preference: String?
        if let value = body["refundPreference"] {
            guard let text = value.stringValue, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(text) else {
                // InvalidRefundPreferenceError: its code is not in the sources read; Apple's generic one.
                return Self.error(400, 4000000, "Invalid request. The refund preference field is invalid.")
            }
            preference = text
        }
        if let value = body["consumptionPercentage"] {
            guard let percentage = value.int64Value, (0...100_000).contains(percentage) else {
                return Self.error(400, 4000000, "Invalid request. The consumption percentage field is invalid.")
            }
        }
        consumption.withLock {
            $0.append(ConsumptionAnswer(
                environment: environment, transactionID: transactionID, deliveryStatus: status, refundPreference: preference,
                sampleContentProvided: sample))
        }
        return ServerReply(status: 202, headers: [], body: [])
    }

    /// A mock App Store from files: the leaf's private key, the chain's three certificates (PEM or DER)
    /// (leaf, intermediate, root) and the public key tokens are checked with.
    public static func load(keyPath: String, chainPaths: [String], tokenKeyPath: String, bundleID: String) throws -> MockAppStore {
        func bytes(_ path: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else { throw MockServerError("cannot read \(path)") }
            return Array(data)
        }
        func text(_ path: String) throws -> String { String(decoding: try bytes(path), as: UTF8.self) }
        let key = try ES256PrivateKey(pem: try text(keyPath))
        var chain: [[UInt8]] = []
        for path in chainPaths {
            let certificates = try SignedDataVerifier.rootCertificates(fromFile: try bytes(path))
            guard certificates.count == 1 else { throw MockServerError("\(path) must hold one certificate") }
            chain.append(certificates[0])
        }
        let tokenKey = try ES256PublicKey(pem: try text(tokenKeyPath))
        return MockAppStore(settings: Settings(signer: JWSSigner(key: key, certificateChainDER: chain), tokenKey: tokenKey, bundleID: bundleID))
    }

    /// `POST /_mock/appstore/transactions`.
    func register(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body),
            let environment = object["environment"]?.stringValue, ["Production", "Sandbox"].contains(environment),
            case .array(let list)? = object["transactions"]
        else {
            return .json(400, .object(JSONObject(["error": .string("expected {\"environment\": \"Production\"|\"Sandbox\", \"transactions\": [...]}")])))
        }
        var payloads: [JSONObject] = []
        for value in list {
            guard case .object(var payload) = value, payload["transactionId"]?.stringValue != nil else {
                return .json(400, .object(JSONObject(["error": .string("each transaction needs a string transactionId")])))
            }
            if payload["bundleId"] == nil { payload["bundleId"] = .string(settings.bundleID) }
            if payload["environment"] == nil { payload["environment"] = .string(environment) }
            if payload["signedDate"] == nil { payload["signedDate"] = .number(String(Int64(Date().timeIntervalSince1970 * 1000))) }
            payloads.append(payload)
        }
        transactions.withLock { $0[environment, default: []] += payloads }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    /// `POST /_mock/appstore/notifications`.
    func registerNotifications(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body),
            let environment = object["environment"]?.stringValue, ["Production", "Sandbox"].contains(environment),
            case .array(let list)? = object["notifications"]
        else {
            return .json(400, .object(JSONObject(["error": .string("expected {\"environment\": \"Production\"|\"Sandbox\", \"notifications\": [...]}")])))
        }
        let now = String(Int64(Date().timeIntervalSince1970 * 1000))
        var payloads: [JSONObject] = []
        for value in list {
            guard case .object(var payload) = value, payload["notificationUUID"]?.stringValue != nil, payload["notificationType"]?.stringValue != nil
            else {
                return .json(400, .object(JSONObject(["error": .string("each notification needs a string notificationUUID and notificationType")])))
            }
            if payload["signedDate"] == nil { payload["signedDate"] = .number(now) }
            // A notification naming its app in `summary`, `appData` or `externalPurchaseToken`
            // is signed as registered: it has no `data`.
            if ["summary", "appData", "externalPurchaseToken"].contains(where: { payload[$0] != nil }) {
                payloads.append(payload)
                continue
            }
            var data = payload["data"]?.objectValue ?? JSONObject()
            if data["bundleId"] == nil { data["bundleId"] = .string(settings.bundleID) }
            if data["environment"] == nil { data["environment"] = .string(environment) }
            if case .object(var transaction)? = data["transactionInfo"] {
                if transaction["bundleId"] == nil { transaction["bundleId"] = .string(settings.bundleID) }
                if transaction["environment"] == nil { transaction["environment"] = .string(environment) }
                if transaction["signedDate"] == nil { transaction["signedDate"] = .number(now) }
                guard let signed = sign(transaction) else { return Self.error(500, 5000000, "cannot sign the transaction") }
                data["transactionInfo"] = nil
                data["signedTransactionInfo"] = .string(signed)
            }
            payload["data"] = .object(data)
            payloads.append(payload)
        }
        notifications.withLock { $0[environment, default: []] += payloads }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    /// Get Notification History: the registered notifications whose `signedDate` is in
    /// `[startDate, endDate)`, in registration order, `notificationPageSize` a page; the token is
    /// the next page's offset.
    func notificationHistory(_ request: ServerRequest, environment: String) -> ServerReply {
        guard case .object(let body)? = try? JSONParser().parse(request.body) else {
            return Self.error(400, 4000000, "Invalid request.")
        }
        guard let start = body["startDate"]?.int64Value else { return Self.error(400, 4000015, "Invalid start date.") }
        guard let end = body["endDate"]?.int64Value else { return Self.error(400, 4000016, "Invalid end date.") }
        guard start < end else { return Self.error(400, 4000013, "Start date after end date.") }
        let matching = notifications.withLock { $0[environment] ?? [] }.filter {
            guard let signed = $0["signedDate"]?.int64Value else { return false }
            return signed >= start && signed < end
        }
        var offset = 0
        if let token = Self.queryValue("paginationToken", in: request.query) {
            guard token.hasPrefix("offset-"), let value = Int(token.dropFirst("offset-".count)), value >= 0, value <= matching.count else {
                return Self.error(400, 4000014, "Invalid pagination token.")
            }
            offset = value
        }
        let next = min(matching.count, offset + max(1, settings.notificationPageSize))
        var history: [JSONValue] = []
        for payload in matching[offset..<next] {
            guard let jws = sign(payload) else { return Self.error(500, 5000000, "An unknown error occurred.") }
            history.append(.object(JSONObject(["signedPayload": .string(jws), "sendAttempts": .array([])])))
        }
        var answer = JSONObject(["notificationHistory": .array(history), "hasMore": .bool(next < matching.count)])
        if next < matching.count { answer["paginationToken"] = .string("offset-\(next)") }
        return .json(200, .object(answer))
    }

    /// Answers one API request for `environment` (`Production` or `Sandbox`); `path` is the part
    /// after `/appstore/production` or `/appstore/sandbox`.
    func handle(_ request: ServerRequest, path: String, environment: String) -> ServerReply {
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            let claims = try? AppStoreJWT.verify(String(authorization.dropFirst(7)), with: settings.tokenKey, now: Date()),
            claims.bundleID == settings.bundleID
        else {
            // Apple answers 401 with a body that is not JSON.
            return ServerReply(status: 401, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array("Unauthenticated\n".utf8))
        }
        if request.method == "POST" && path == "/inApps/v1/notifications/history" {
            return notificationHistory(request, environment: environment)
        }
        if request.method == "PUT" && path.hasPrefix("/inApps/v2/transactions/consumption/") {
            let id = String(path.dropFirst("/inApps/v2/transactions/consumption/".count)).removingPercentEncoding ?? ""
            return sendConsumption(request, transactionID: id, environment: environment)
        }
        guard request.method == "GET" else { return Self.error(404, 4040000, "no such endpoint") }
        if path.hasPrefix("/inApps/v1/lookup/") {
            return lookUpOrder(String(path.dropFirst("/inApps/v1/lookup/".count)).removingPercentEncoding ?? "", environment: environment)
        }
        let known = transactions.withLock { $0[environment] ?? [] }
        if path.hasPrefix("/inApps/v1/transactions/") {
            let id = String(path.dropFirst("/inApps/v1/transactions/".count)).removingPercentEncoding ?? ""
            guard let payload = known.first(where: { $0["transactionId"]?.stringValue == id })
                ?? known.first(where: { $0["originalTransactionId"]?.stringValue == id })
            else {
                return Self.error(404, 4040010, "Transaction id not found.")
            }
            guard let signed = sign(payload) else { return Self.error(500, 5000000, "An unknown error occurred.") }
            return .json(200, .object(JSONObject(["signedTransactionInfo": .string(signed)])))
        }
        if path.hasPrefix("/inApps/v2/history/") {
            let id = String(path.dropFirst("/inApps/v2/history/".count)).removingPercentEncoding ?? ""
            guard known.contains(where: { $0["transactionId"]?.stringValue == id || $0["originalTransactionId"]?.stringValue == id }) else {
                return Self.error(404, 4040010, "Transaction id not found.")
            }
            let start = Self.queryValue("revision", in: request.query).flatMap(Int.init) ?? 0
            guard start >= 0, start <= known.count else { return Self.error(400, 4000000, "Invalid request.") }
            let end = min(known.count, start + settings.pageSize)
            var signed: [JSONValue] = []
            for payload in known[start..<end] {
                guard let jws = sign(payload) else { return Self.error(500, 5000000, "An unknown error occurred.") }
                signed.append(.string(jws))
            }
            return .json(200, .object(JSONObject([
                "revision": .string(String(end)), "hasMore": .bool(end < known.count), "bundleId": .string(settings.bundleID),
                "environment": .string(environment), "signedTransactions": .array(signed),
            ])))
        }
        return Self.error(404, 4040000, "no such endpoint")
    }

    func sign(_ payload: JSONObject) -> String? {
        try? settings.signer.sign(payload: JSONWriter.bytes(.object(payload)))
    }

    /// Apple's error body.
    static func error(_ status: Int, _ code: Int, _ message: String) -> ServerReply {
        .json(status, .object(JSONObject(["errorCode": .number(String(code)), "errorMessage": .string(message)])))
    }

    static func queryValue(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]).removingPercentEncoding }
        }
        return nil
    }
}
