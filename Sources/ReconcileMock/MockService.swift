import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// The mock's behaviour: Apple's `verifyReceipt` (production and sandbox), the merchant
/// verification protocol, a delivery endpoint and a revocation endpoint, with injectable faults
/// and counters.
///
/// | path | protocol |
/// |---|---|
/// | `POST /verifyReceipt` | Apple production |
/// | `POST /sandbox/verifyReceipt` | Apple sandbox |
/// | `POST /merchant/verify` | the merchant protocol (`Kind=http`) |
/// | `POST /deliver` | delivery |
/// | `POST /revocation` | revocation notices (`[Revocation] URL=`): every event recorded per `Idempotency-Key` |
/// | `GET /appstore/production/…`, `/appstore/sandbox/…` | the App Store Server API (``MockAppStore``) |
/// | `POST /_mock/appstore/transactions` | register App Store transactions |
/// | `POST /_mock/appstore/notifications` | register App Store notifications (Get Notification History) |
/// | `POST /_mock/appstore/orders` | register customers' orders (Look Up Order ID) |
/// | `/googleplay/…` | Google Play's token endpoint and Developer API (``MockGooglePlay``) |
/// | `POST /_mock/googleplay/purchases`, `/config`, `/revoke-tokens` | script Google Play |
/// | `POST /pubsub/v1/projects/{p}/subscriptions/{s}:pull`, `:acknowledge` | Cloud Pub/Sub pull (``MockPubSub``, with Google Play's tokens) |
/// | `POST /_mock/pubsub/publish`, `/_mock/pubsub/config` | script Pub/Sub |
/// | `GET /_mock/stats` | counters, as JSON (`"appstore"`: the consumption answers accepted) |
/// | `POST /_mock/config` | change faults (see ``MockFaults``) |
/// | `POST /_mock/reset-stats` | zero the counters |
public final class MockService: Sendable {
    /// Fixed settings.
    public struct Settings: Sendable {
        /// Apple's shared secret; a request with another `password` gets 21004.
        public var sharedSecret: String?
        /// The bearer token the merchant and delivery endpoints require.
        public var token: String?
        /// The delivery endpoint's status (200 unless a test wants 409, 422, …).
        public var deliveryStatus = 200
        /// The revocation endpoint's status (200 unless a test wants 409, 422, 503, …).
        public var revocationStatus = 200
        public var seed: UInt64?
        /// The App Store Server API, when the mock was given a signing chain.
        public var appStore: MockAppStore?
        /// Google Play, when the mock was given a test service account key.
        public var googlePlay: MockGooglePlay?

        public init(sharedSecret: String? = nil, token: String? = nil) {
            self.sharedSecret = sharedSecret
            self.token = token
        }
    }

    struct State {
        var faults = MockFaults()
        var stats = MockStats()
        var random: SeededRandomSource
        var deliveryStatus: Int
        var revocationStatus: Int
    }

    let settings: Settings
    let state: Mutex<State>
    /// Called for every request, after counting (the executable uses it for its idle exit).
    let onRequest: @Sendable () -> Void

    public init(settings: Settings = Settings(), faults: MockFaults = MockFaults(), onRequest: @escaping @Sendable () -> Void = {}) {
        self.settings = settings
        self.state = Mutex(State(
            faults: faults, random: SeededRandomSource(seed: settings.seed ?? UInt64.random(in: 0...UInt64.max)),
            deliveryStatus: settings.deliveryStatus, revocationStatus: settings.revocationStatus))
        self.onRequest = onRequest
    }

    /// The counters so far.
    public var stats: MockStats { state.withLock { $0.stats } }

    public func setFaults(_ faults: MockFaults) {
        state.withLock { $0.faults = faults }
    }

    /// Handles one request.
    public func handle(_ request: ServerRequest) -> ServerReply {
        defer { onRequest() }
        switch (request.method, request.path) {
        case ("GET", "/_mock/stats"):
            var stats = state.withLock { $0.stats.json }
            if let googlePlay = settings.googlePlay, case .object(var object) = stats {
                object["googleplay"] = googlePlay.stats.json
                stats = .object(object)
            }
            if let appStore = settings.appStore, case .object(var object) = stats {
                object["appstore"] = appStore.statsJSON
                stats = .object(object)
            }
            return .json(200, stats)
        case ("POST", "/_mock/reset-stats"):
            state.withLock { $0.stats = MockStats() }
            return .json(200, .object(JSONObject(["ok": .bool(true)])))
        case ("POST", "/_mock/config"):
            return configure(request)
        case ("POST", "/verifyReceipt"):
            return withFaults(request, endpoint: "production") { apple(request, environment: "Production") }
        case ("POST", "/sandbox/verifyReceipt"):
            return withFaults(request, endpoint: "sandbox") { apple(request, environment: "Sandbox") }
        case ("POST", "/merchant/verify"):
            return withFaults(request, endpoint: "merchant") { merchant(request) }
        case ("POST", "/deliver"):
            return withFaults(request, endpoint: "delivery") { deliver(request) }
        case ("POST", "/revocation"):
            return withFaults(request, endpoint: "revocation") { revocation(request) }
        case ("POST", "/_mock/appstore/transactions"):
            guard let appStore = settings.appStore else { return Self.noAppStore }
            return appStore.register(request)
        case ("POST", "/_mock/appstore/orders"):
            guard let appStore = settings.appStore else { return Self.noAppStore }
            return appStore.registerOrders(request)
        case ("POST", "/_mock/appstore/notifications"):
            guard let appStore = settings.appStore else { return Self.noAppStore }
            return appStore.registerNotifications(request)
        case ("POST", "/_mock/googleplay/purchases"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return googlePlay.register(request)
        case ("POST", "/_mock/googleplay/config"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return googlePlay.configure(request)
        case ("POST", "/_mock/googleplay/revoke-tokens"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return googlePlay.revokeTokens()
        case ("POST", "/_mock/pubsub/publish"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return googlePlay.pubSub.publish(request)
        case ("POST", "/_mock/pubsub/config"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return googlePlay.pubSub.configure(request)
        case (_, let path) where path.hasPrefix("/pubsub/"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            return withFaults(request, endpoint: "pubsub") {
                googlePlay.handlePubSub(request, path: String(path.dropFirst("/pubsub".count))) { change in state.withLock { change(&$0.stats) } }
            }
        case (_, let path) where path.hasPrefix("/googleplay/"):
            guard let googlePlay = settings.googlePlay else { return Self.noGooglePlay }
            let rest = String(path.dropFirst("/googleplay".count))
            return withFaults(request, endpoint: rest == "/token" ? "googleplay-token" : "googleplay") { googlePlay.handle(request, path: rest) }
        case (_, let path) where path.hasPrefix("/appstore/production/") || path.hasPrefix("/appstore/sandbox/"):
            guard let appStore = settings.appStore else { return Self.noAppStore }
            let sandbox = path.hasPrefix("/appstore/sandbox/")
            let rest = String(path.dropFirst(sandbox ? "/appstore/sandbox".count : "/appstore/production".count))
            return withFaults(request, endpoint: sandbox ? "sandbox" : "production") {
                appStore.handle(request, path: rest, environment: sandbox ? "Sandbox" : "Production")
            }
        default:
            return .json(404, .object(JSONObject(["error": .string("no such path \(request.path)")])))
        }
    }

    static let noGooglePlay = ServerReply.json(
        404, .object(JSONObject(["error": .string("Google Play needs --googleplay-key (a test service account's JSON key)")])))

    static let noAppStore = ServerReply.json(
        404, .object(JSONObject(["error": .string("the App Store Server API needs --appstore-key, --appstore-chain and --appstore-token-key")])))

    // MARK: - Faults

    func configure(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body) else {
            return .json(400, .object(JSONObject(["error": .string("the body must be a JSON object")])))
        }
        do {
            // The endpoints' scripted statuses are not faults: MockFaults refuses keys it does not know.
            let statusKeys: Set<String> = ["delivery_status", "revocation_status"]
            var faults = state.withLock { $0.faults }
            try faults.apply(JSONObject(object.members.filter { !statusKeys.contains($0.key) }))
            if let status = object["delivery_status"]?.int64Value {
                state.withLock { $0.deliveryStatus = Int(status) }
            }
            if let status = object["revocation_status"]?.int64Value {
                state.withLock { $0.revocationStatus = Int(status) }
            }
            state.withLock { $0.faults = faults }
            return .json(200, .object(JSONObject(["ok": .bool(true)])))
        } catch {
            return .json(400, .object(JSONObject(["error": .string(error.description)])))
        }
    }

    /// Counts the request, then answers it with the configured faults around `answer`.
    func withFaults(_ request: ServerRequest, endpoint: String, _ answer: () -> ServerReply) -> ServerReply {
        let (faults, roll) = state.withLock { state -> (MockFaults, Double) in
            state.stats.record(endpoint: endpoint, at: Date())
            return (state.faults, state.random.nextUnit())
        }
        guard faults.pathPrefix.map({ request.path.hasPrefix($0) }) ?? true else { return answer() }
        var extraHeaders: [HTTPHeader] = []
        if let retryAfter = faults.retryAfter { extraHeaders.append(HTTPHeader("Retry-After", retryAfter)) }
        if faults.outage {
            if faults.outageResets { return ServerReply(status: 503, delay: faults.latency, fault: .reset) }
            return ServerReply(status: 503, headers: extraHeaders, body: Array(#"{"error":"outage"}"#.utf8), delay: faults.latency)
        }
        if let redirect = faults.redirectTo {
            return ServerReply(status: 302, headers: [HTTPHeader("Location", redirect)], delay: faults.latency)
        }
        var threshold = 0.0
        func hit(_ rate: Double) -> Bool {
            defer { threshold += rate }
            return roll >= threshold && roll < threshold + rate
        }
        if hit(faults.resetRate) { return ServerReply(status: 200, delay: faults.latency, fault: .reset) }
        for (status, rate) in faults.statusRates.sorted(by: { $0.key < $1.key }) where hit(rate) {
            return ServerReply(status: status, headers: status == 429 || status == 503 ? extraHeaders : [], body: Array(#"{"error":"injected"}"#.utf8), delay: faults.latency)
        }
        let garbled = hit(faults.garbageRate)
        var reply = answer()
        reply.delay = faults.latency
        if garbled {
            // The server did the work and its answer came out garbled: the status line survives
            // (so a delivery's 2xx is still an acknowledgement, DESIGN §5), the body does not.
            reply.body = Array("<html>garbage \u{1}\u{2} not json".utf8)
            return reply
        }
        if hit(faults.truncateRate) { reply.fault = .truncated }
        if hit(faults.resetMidBodyRate) { reply.fault = .resetMidBody }
        if hit(faults.slowBodyRate) { reply.fault = .slowBody(faults.slowBodyPause) }
        if let size = faults.bodyBytes, size > reply.body.count {
            reply.body += [UInt8](repeating: UInt8(ascii: " "), count: size - reply.body.count)
        }
        if let contentType = faults.contentType {
            reply.headers.removeAll { $0.name.lowercased() == "content-type" }
            reply.headers.append(HTTPHeader("Content-Type", contentType))
        }
        return reply
    }

    // MARK: - Apple

    func apple(_ request: ServerRequest, environment: String) -> ServerReply {
        guard case .object(let body)? = try? JSONParser(allowsDuplicateKeys: true).parse(request.body),
            let receiptData = body["receipt-data"]?.stringValue
        else {
            return .json(200, .object(JSONObject(["status": .integer(21000)])))
        }
        let count = state.withLock { $0.stats.countReceipt(receiptData) }
        if let secret = settings.sharedSecret, body["password"]?.stringValue != secret {
            return .json(200, .object(JSONObject(["environment": .string(environment), "status": .integer(21004)])))
        }
        guard let receipt = MockReceipt(base64: receiptData) else {
            return .json(200, .object(JSONObject(["status": .integer(21002)])))
        }
        if receipt.environment == "Sandbox" && environment == "Production" {
            return .json(200, .object(JSONObject(["status": .integer(21007)])))
        }
        if receipt.environment == "Production" && environment == "Sandbox" {
            return .json(200, .object(JSONObject(["status": .integer(21008)])))
        }
        let status = receipt.statuses.isEmpty ? 0 : receipt.statuses[min(count - 1, receipt.statuses.count - 1)]
        guard status == 0 else {
            var answer = JSONObject(["status": .integer(status), "environment": .string(environment)])
            if let retryable = receipt.isRetryable { answer["is_retryable"] = .bool(retryable) }
            return .json(200, .object(answer))
        }
        let items = JSONValue.array(receipt.items.map(Self.appleItem))
        var inner = JSONObject([
            "receipt_type": .string(environment == "Sandbox" ? "ProductionSandbox" : "Production"), "adam_id": .integer(0),
            "app_item_id": .integer(0), "bundle_id": .string(receipt.bundleID), "application_version": .string("1"),
            "download_id": .integer(0), "version_external_identifier": .integer(0),
        ])
        inner["in_app"] = receipt.inLatestReceiptInfo ? .array([]) : items
        var answer = JSONObject(["receipt": .object(inner), "status": .integer(0), "environment": .string(environment)])
        if receipt.inLatestReceiptInfo { answer["latest_receipt_info"] = items }
        return .json(200, .object(answer))
    }

    /// An `in_app` item in Apple's shape: numbers as strings, dates in three forms.
    static func appleItem(_ item: MockReceipt.Item) -> JSONValue {
        let purchase = item.purchaseDateMilliseconds ?? 1_409_628_546_000
        var object = JSONObject([
            "quantity": .string(String(item.quantity)), "product_id": .string(item.productID),
            "transaction_id": .string(item.transactionID),
            "original_transaction_id": .string(item.originalTransactionID ?? item.transactionID),
            "purchase_date": .string(Self.appleDate(purchase)), "purchase_date_ms": .string(String(purchase)),
            "purchase_date_pst": .string(Self.appleDate(purchase - 8 * 3_600_000).replacingOccurrences(of: "Etc/GMT", with: "America/Los_Angeles")),
            "is_trial_period": .string("false"),
        ])
        if let cancelled = item.cancellationDateMilliseconds {
            object["cancellation_date"] = .string(Self.appleDate(cancelled))
            object["cancellation_date_ms"] = .string(String(cancelled))
            object["cancellation_reason"] = .string("0")
        }
        if let token = item.appAccountToken { object["app_account_token"] = .string(token) }
        return .object(object)
    }

    /// `2014-09-02 03:29:06 Etc/GMT`, as Apple writes dates.
    static func appleDate(_ milliseconds: Int64) -> String {
        let text = RFC3339.format(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " Etc/GMT")
    }

    // MARK: - Merchant and delivery

    func authorized(_ request: ServerRequest) -> Bool {
        guard let token = settings.token else { return true }
        return request.header("authorization") == "Bearer \(token)"
    }

    func merchant(_ request: ServerRequest) -> ServerReply {
        guard authorized(request) else { return .json(401, .object(JSONObject(["error": .string("unauthorized")]))) }
        guard case .object(let body)? = try? JSONParser(allowsDuplicateKeys: true).parse(request.body),
            let orderID = body["order_id"]?.stringValue
        else {
            return .json(400, .object(JSONObject(["reason": .string("the body is not a merchant request")])))
        }
        let key = request.header("idempotency-key")
        let receipt = body["receipt"]?.stringValue.flatMap(MockReceipt.init(base64:))
        let count = state.withLock { state -> Int in
            if let token = body["purchase_token"]?.stringValue { state.stats.merchantPurchaseTokens[orderID] = MockStats.fingerprint(token) }
            return state.stats.countGrantRequest(key: key, orderID: orderID, attempt: request.header("reconcile-attempt"))
        }
        let answers = receipt?.merchantAnswers ?? []
        let answer = answers.isEmpty ? "verified" : answers[min(count - 1, answers.count - 1)]
        switch answer {
        case "verified":
            let transaction = receipt?.items.first?.transactionID ?? body["transaction_id"]?.stringValue ?? "m-\(orderID)"
            state.withLock { $0.stats.grantSucceeded(orderID: orderID) }
            return .json(200, .object(JSONObject(["result": .string("verified"), "transaction_id": .string(transaction)])))
        case "rejected":
            return .json(200, .object(JSONObject(["result": .string("rejected"), "reason": .string("the merchant refused it")])))
        case "pending":
            return .json(200, .object(JSONObject(["result": .string("pending")])))
        default:
            let status = Int(answer) ?? 500
            return .json(status, .object(JSONObject(["reason": .string("mock answer \(status)")])))
        }
    }

    func deliver(_ request: ServerRequest) -> ServerReply {
        guard authorized(request) else { return .json(401, .object(JSONObject(["error": .string("unauthorized")]))) }
        guard case .object(let body)? = try? JSONParser(allowsDuplicateKeys: true).parse(request.body),
            let orderID = body["order_id"]?.stringValue
        else {
            return .json(400, .object(JSONObject(["reason": .string("the body is not a delivery")])))
        }
        let status = state.withLock { state -> Int in
            state.stats.countDelivery(
                key: request.header("idempotency-key"), orderID: orderID, succeeded: (200...299).contains(state.deliveryStatus),
                store: body["store"]?.stringValue, transactionID: body["transaction_id"]?.stringValue,
                packageName: body["package_name"]?.stringValue, origin: body["origin"]?.stringValue)
            return state.deliveryStatus
        }
        return .json(status, .object(JSONObject(["ok": .bool((200...299).contains(status))])))
    }

    /// `[Revocation] URL=`: records every notice under its `Idempotency-Key` (the body's fields,
    /// how often the key came, how often it was answered 2xx) and answers `revocation_status`.
    func revocation(_ request: ServerRequest) -> ServerReply {
        guard authorized(request) else { return .json(401, .object(JSONObject(["error": .string("unauthorized")]))) }
        guard case .object(let body)? = try? JSONParser().parse(request.body), let orderID = body["order_id"]?.stringValue,
            let key = request.header("idempotency-key"), !key.isEmpty
        else {
            return .json(400, .object(JSONObject(["reason": .string("the body is not a revocation notice, or it has no Idempotency-Key")])))
        }
        let status = state.withLock { state -> Int in
            state.stats.countRevocation(
                key: key, orderID: orderID, body: body, contentType: request.header("content-type"),
                succeeded: (200...299).contains(state.revocationStatus))
            return state.revocationStatus
        }
        return .json(status, .object(JSONObject(["ok": .bool((200...299).contains(status))])))
    }
}
