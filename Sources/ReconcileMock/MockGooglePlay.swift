import Foundation
import ReconcileCore
import ReconcileCrypto
import Synchronization
import ReconcileFoundation

/// Google Play as the mock plays it (`[GooglePlay]`): an OAuth token endpoint that checks the JWT
/// bearer grant with the test service account's key, and the Developer API's
/// `purchases.products.get`, `:acknowledge`, `:consume` and `voidedpurchases.list` for purchases a
/// test registered, each request's access token checked; and Cloud Pub/Sub pull (``MockPubSub``)
/// with the same tokens.
///
/// Each access token keeps the scopes its grant's `scope` claim named (space-separated): the
/// Developer API needs `https://www.googleapis.com/auth/androidpublisher`, Pub/Sub
/// `https://www.googleapis.com/auth/pubsub`; a valid token without the scope gets 403
/// `PERMISSION_DENIED` "Request had insufficient authentication scopes.", no valid token 401.
///
/// | path (under `/googleplay`) | answer |
/// |---|---|
/// | `POST /token` | `{"access_token", "token_type", "expires_in"}`, or 400 `invalid_grant` |
/// | `GET /androidpublisher/v3/applications/{package}/purchases/products/{product}/tokens/{token}` | a `ProductPurchase` |
/// | `POST …/tokens/{token}:acknowledge`, `…:consume` | `{}` |
/// | `GET /androidpublisher/v3/applications/{package}/purchases/voidedpurchases` | the voided purchases, paged |
/// | `GET /androidpublisher/v3/applications/{package}/orders/{orderId}` | an `Order` made from the registered purchase with that `orderId`, or 404 |
///
/// `POST /_mock/googleplay/purchases` registers purchases: `{"purchases": [{"token", "package",
/// "product", "purchaseState" (or "states": [2, 0], one per read, the last repeating),
/// "orderId", "purchaseType", "acknowledgementState", "consumptionState",
/// "obfuscatedExternalAccountId", "purchaseTimeMillis", "quantity", "status" (answer this HTTP
/// status instead, with Google's error body), "reason", "voided": {"voidedTimeMillis",
/// "voidedSource", "voidedReason"}, "subscription": true (its order's line item is a
/// subscription's), "orderStatus" (`orders.get` answers this HTTP status instead)}]}`.
/// `orders.get` answers `state` `REFUNDED` for a voided purchase, else `PROCESSED`, `CANCELED` or
/// `PENDING` by its `purchaseState`. `POST /_mock/googleplay/config` sets
/// `{"expires_in": seconds the token endpoint announces, "token_lifetime_ms": how long a token is
/// accepted}`; `POST /_mock/googleplay/revoke-tokens` makes every token issued so far invalid.
public final class MockGooglePlay: Sendable {
    /// The key grants must be signed with, and the audience they must name.
    public struct Settings: Sendable {
        public var key: RS256PublicKey
        /// The test key file's `token_uri`.
        public var audience: String
        /// How long a message pulled from Pub/Sub stays outstanding (`--pubsub-ack-deadline`).
        public var pubSubAckDeadline: TimeInterval

        public init(key: RS256PublicKey, audience: String, pubSubAckDeadline: TimeInterval = MockPubSub.defaultAckDeadline) {
            self.key = key
            self.audience = audience
            self.pubSubAckDeadline = pubSubAckDeadline
        }
    }

    /// The scope the Developer API needs.
    public static let androidPublisherScope = GoogleJWT.scope
    /// The scope Cloud Pub/Sub needs.
    public static let pubSubScope = "https://www.googleapis.com/auth/pubsub"

    /// An access token the token endpoint issued.
    struct IssuedToken {
        /// When it stops being accepted.
        var until: Date
        /// What its grant's `scope` claim named.
        var scopes: Set<String>
    }

    /// What a request's access token allows.
    enum Access: Equatable {
        case granted
        /// No token, or one not issued or no longer accepted: 401.
        case unauthenticated
        /// A valid token without the scope: 403.
        case insufficientScope
    }

    /// One registered purchase.
    struct Purchase {
        var token: String
        var package: String
        var product: String
        var states: [Int]
        var reads = 0
        var fields: JSONObject
        var status: Int?
        var reason: String?
        var acknowledged: Bool
        var consumed: Bool
        var voided: JSONObject?
        var registered: Int
        var subscription = false
        var orderStatus: Int?

        var purchaseState: Int { states[min(max(reads - 1, 0), states.count - 1)] }
    }

    struct State {
        var purchases: [String: Purchase] = [:]
        var registrations = 0
        /// Issued access tokens, when each stops being accepted and its scopes.
        var tokens: [String: IssuedToken] = [:]
        var expiresIn = 3600
        var tokenLifetime: TimeInterval = 3600
        var stats = Stats()
    }

    /// What the Google side has seen (tokens by fingerprint, never in full).
    public struct Stats: Sendable, Hashable {
        public var tokenRequests = 0
        public var tokensIssued = 0
        public var grantsRefused = 0
        public var unauthorized = 0
        /// Requests whose token was valid but lacked the scope (403).
        public var insufficientScope = 0
        public var reads: [String: Int] = [:]
        public var acknowledgeRequests: [String: Int] = [:]
        public var acknowledged: [String: Int] = [:]
        public var consumeRequests: [String: Int] = [:]
        public var consumed: [String: Int] = [:]
        public var voidedListRequests = 0
        /// `orders.get` requests, by order id.
        public var orderReads: [String: Int] = [:]

        var json: JSONValue {
            func counts(_ table: [String: Int]) -> JSONValue {
                .object(JSONObject(table.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: .integer($0.value)) }))
            }
            return .object(JSONObject([
                "token_requests": .integer(tokenRequests), "tokens_issued": .integer(tokensIssued), "grants_refused": .integer(grantsRefused),
                "unauthorized": .integer(unauthorized), "insufficient_scope": .integer(insufficientScope), "reads": counts(reads), "acknowledge_requests": counts(acknowledgeRequests),
                "acknowledged": counts(acknowledged), "consume_requests": counts(consumeRequests), "consumed": counts(consumed),
                "voided_list_requests": .integer(voidedListRequests), "order_reads": counts(orderReads),
            ]))
        }

        public init() {}

        public init(json: JSONValue) {
            func counts(_ value: JSONValue?) -> [String: Int] {
                Dictionary(uniqueKeysWithValues: (value?.objectValue?.members ?? []).map { ($0.key, Int($0.value.int64Value ?? 0)) })
            }
            tokenRequests = Int(json["token_requests"]?.int64Value ?? 0)
            tokensIssued = Int(json["tokens_issued"]?.int64Value ?? 0)
            grantsRefused = Int(json["grants_refused"]?.int64Value ?? 0)
            unauthorized = Int(json["unauthorized"]?.int64Value ?? 0)
            insufficientScope = Int(json["insufficient_scope"]?.int64Value ?? 0)
            reads = counts(json["reads"])
            acknowledgeRequests = counts(json["acknowledge_requests"])
            acknowledged = counts(json["acknowledged"])
            consumeRequests = counts(json["consume_requests"])
            consumed = counts(json["consumed"])
            voidedListRequests = Int(json["voided_list_requests"]?.int64Value ?? 0)
            orderReads = counts(json["order_reads"])
        }
    }

    let settings: Settings
    let state = Mutex(State())
    /// Cloud Pub/Sub pull, authorized with this endpoint's tokens.
    public let pubSub: MockPubSub

    public init(settings: Settings) {
        self.settings = settings
        self.pubSub = MockPubSub(ackDeadline: settings.pubSubAckDeadline)
    }

    /// A mock Google Play for the service account key file at `path` (a test key, never a real
    /// one): grants must be signed with its key and name its `token_uri`.
    public static func load(keyFile path: String, pubSubAckDeadline: TimeInterval = MockPubSub.defaultAckDeadline) throws -> MockGooglePlay {
        guard let data = FileManager.default.contents(atPath: path) else { throw MockServerError("cannot read \(path)") }
        let account = try GoogleServiceAccount(json: Array(data))
        return MockGooglePlay(settings: Settings(key: account.key.publicKey, audience: account.tokenURI, pubSubAckDeadline: pubSubAckDeadline))
    }

    /// The counters so far.
    public var stats: Stats { state.withLock { $0.stats } }

    /// Routes a request under `/googleplay` (`path` is the rest).
    func handle(_ request: ServerRequest, path: String) -> ServerReply {
        if path == "/token" { return token(request) }
        switch access(request, scope: Self.androidPublisherScope) {
        case .granted: break
        case .unauthenticated:
            return Self.error(401, "authError", "Request had invalid authentication credentials.", status: "UNAUTHENTICATED")
        case .insufficientScope:
            return Self.error(403, "insufficientPermissions", Self.insufficientScopes, status: "PERMISSION_DENIED")
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map { String($0).removingPercentEncoding ?? String($0) }
        if parts.count == 7, parts[1] == "androidpublisher", parts[3] == "applications", parts[5] == "orders", request.method == "GET" {
            return order(package: parts[4], orderID: parts[6])
        }
        // ["", "androidpublisher", "v3", "applications", package, "purchases", …]
        guard parts.count >= 7, parts[1] == "androidpublisher", parts[2] == "v3", parts[3] == "applications", parts[5] == "purchases" else {
            return Self.notFoundPage
        }
        let package = parts[4]
        if parts.count == 7, parts[6] == "voidedpurchases", request.method == "GET" { return voided(package: package, query: request.query) }
        // A path that is no method (`…/tokens/` with no token, say) gets Google's front end's
        // HTML 404, not the API's JSON error.
        guard parts.count == 10, parts[6] == "products", parts[8] == "tokens", !parts[9].isEmpty else { return Self.notFoundPage }
        let product = parts[7]
        var token = parts[9]
        var verb = ""
        if let colon = token.lastIndex(of: ":") {
            verb = String(token[token.index(after: colon)...])
            token = String(token[..<colon])
        }
        switch (request.method, verb) {
        case ("GET", ""): return read(package: package, product: product, token: token)
        case ("POST", "acknowledge"), ("POST", "consume"): return act(verb, package: package, product: product, token: token)
        default: return Self.error(404, "notFound", "No such method.")
        }
    }

    // MARK: - Token endpoint

    func token(_ request: ServerRequest) -> ServerReply {
        let form = Self.form(String(decoding: request.body, as: UTF8.self))
        state.withLock { $0.stats.tokenRequests += 1 }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
            state.withLock { $0.stats.grantsRefused += 1 }
            return .json(400, .object(JSONObject(["error": .string("unsupported_grant_type"), "error_description": .string("Invalid grant_type")])))
        }
        let claims: GoogleJWT.Claims
        do {
            claims = try GoogleJWT.verify(assertion, with: settings.key, audience: settings.audience, now: Date())
        } catch {
            state.withLock { $0.stats.grantsRefused += 1 }
            return .json(400, .object(JSONObject(["error": .string("invalid_grant"), "error_description": .string(error.description)])))
        }
        let access = "ya29.mock-" + UUID().uuidString.lowercased()
        let expiresIn = state.withLock { state -> Int in
            state.tokens[access] = IssuedToken(
                until: Date().addingTimeInterval(state.tokenLifetime), scopes: Set(claims.scope.split(separator: " ").map(String.init)))
            state.stats.tokensIssued += 1
            return state.expiresIn
        }
        return .json(200, .object(JSONObject([
            "access_token": .string(access), "expires_in": .integer(expiresIn), "token_type": .string("Bearer"),
        ])))
    }

    /// Whether the request's access token is valid and was granted `scope`.
    func access(_ request: ServerRequest, scope: String) -> Access {
        guard let header = request.header("authorization"), header.hasPrefix("Bearer ") else {
            state.withLock { $0.stats.unauthorized += 1 }
            return .unauthenticated
        }
        let token = String(header.dropFirst(7))
        return state.withLock { state in
            guard let issued = state.tokens[token], issued.until > Date() else {
                state.stats.unauthorized += 1
                return .unauthenticated
            }
            guard issued.scopes.contains(scope) else {
                state.stats.insufficientScope += 1
                return .insufficientScope
            }
            return .granted
        }
    }

    static let insufficientScopes = "Request had insufficient authentication scopes."

    // MARK: - Pub/Sub

    /// Routes a request under `/pubsub` (`path` is the rest) to ``MockPubSub`` once its token
    /// holds the Pub/Sub scope; `record` changes the service's counters.
    func handlePubSub(_ request: ServerRequest, path: String, record: MockPubSub.Recorder) -> ServerReply {
        switch access(request, scope: Self.pubSubScope) {
        case .granted: return pubSub.handle(request, path: path, record: record)
        case .unauthenticated:
            return MockPubSub.error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        case .insufficientScope: return MockPubSub.error(403, Self.insufficientScopes)
        }
    }

    // MARK: - Purchases

    func read(package: String, product: String, token: String) -> ServerReply {
        state.withLock { state -> ServerReply in
            let key = MockStats.fingerprint(token)
            state.stats.reads[key, default: 0] += 1
            guard var purchase = state.purchases[token], purchase.package == package, purchase.product == product else {
                return Self.error(404, "purchaseTokenNotFound", "The purchase token was not found.")
            }
            if let status = purchase.status {
                return Self.error(status, purchase.reason ?? Self.reason(for: status), "Scripted answer \(status).")
            }
            purchase.reads += 1
            state.purchases[token] = purchase
            var object = JSONObject([
                "kind": .string("androidpublisher#productPurchase"),
                "purchaseTimeMillis": .string(String(Int64(Date().timeIntervalSince1970 * 1000) - 60_000)),
                "purchaseState": .integer(purchase.purchaseState), "consumptionState": .integer(purchase.consumed ? 1 : 0),
                "acknowledgementState": .integer(purchase.acknowledged || purchase.consumed ? 1 : 0), "regionCode": .string("US"),
            ])
            for member in purchase.fields.members { object[member.key] = member.value }
            return .json(200, .object(object))
        }
    }

    /// `orders.get`: the registered purchase with this `orderId`, as an `Order`.
    func order(package: String, orderID: String) -> ServerReply {
        state.withLock { state -> ServerReply in
            state.stats.orderReads[orderID, default: 0] += 1
            guard let purchase = state.purchases.values.first(where: { $0.package == package && $0.fields["orderId"]?.stringValue == orderID }) else {
                return Self.error(404, "notFound", "The order was not found.", status: "NOT_FOUND")
            }
            if let status = purchase.orderStatus {
                return Self.error(status, Self.reason(for: status), "Scripted answer \(status).")
            }
            let milliseconds = purchase.fields["purchaseTimeMillis"].flatMap { $0.stringValue.flatMap { Int64($0) } ?? $0.int64Value }
                ?? Int64(Date().timeIntervalSince1970 * 1000) - 60_000
            let created = RFC3339.format(Date(epochMilliseconds: milliseconds))
            var orderState = [PlayPurchase.purchased: "PROCESSED", PlayPurchase.cancelled: "CANCELED", PlayPurchase.pending: "PENDING"][purchase.purchaseState] ?? "STATE_UNSPECIFIED"
            var history = JSONObject(["processedEvent": .object(JSONObject(["eventTime": .string(created)]))])
            var lastEvent = created
            if let voided = purchase.voided {
                orderState = "REFUNDED"
                let time = voided["voidedTimeMillis"].flatMap { $0.stringValue.flatMap { Int64($0) } ?? $0.int64Value } ?? milliseconds + 60_000
                lastEvent = RFC3339.format(Date(epochMilliseconds: time))
                history["refundEvents"] = .array([.object(JSONObject(["eventTime": .string(lastEvent), "refundReason": .string("OTHER")]))])
            }
            var item = JSONObject(["productId": .string(purchase.product), "productTitle": .string(purchase.product)])
            if purchase.subscription {
                item["subscriptionDetails"] = .object(JSONObject(["basePlanId": .string("monthly"), "offerPhase": .string("BASE")]))
            } else {
                item["oneTimePurchaseDetails"] = .object(JSONObject(["quantity": .integer(Int(purchase.fields["quantity"]?.int64Value ?? 1))]))
            }
            return .json(200, .object(JSONObject([
                "orderId": .string(orderID), "purchaseToken": .string(purchase.token), "state": .string(orderState),
                "lineItems": .array([.object(item)]), "createTime": .string(created), "lastEventTime": .string(lastEvent),
                "total": .object(JSONObject(["currencyCode": .string("USD"), "units": .string("0"), "nanos": .integer(990_000_000)])),
                "orderHistory": .object(history),
            ])))
        }
    }

    func act(_ verb: String, package: String, product: String, token: String) -> ServerReply {
        state.withLock { state -> ServerReply in
            let key = MockStats.fingerprint(token)
            if verb == "consume" { state.stats.consumeRequests[key, default: 0] += 1 } else { state.stats.acknowledgeRequests[key, default: 0] += 1 }
            guard var purchase = state.purchases[token], purchase.package == package, purchase.product == product else {
                return Self.error(404, "purchaseTokenNotFound", "The purchase token was not found.")
            }
            if let status = purchase.status {
                return Self.error(status, purchase.reason ?? Self.reason(for: status), "Scripted answer \(status).")
            }
            guard purchase.purchaseState == PlayPurchase.purchased else {
                return Self.error(400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
            }
            if verb == "consume" {
                guard !purchase.consumed else {
                    return Self.error(400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
                }
                purchase.consumed = true
                state.stats.consumed[key, default: 0] += 1
            } else {
                guard !purchase.acknowledged && !purchase.consumed else {
                    return Self.error(400, "invalidPurchaseState", "The purchase is not in a valid state to perform the desired operation.")
                }
                purchase.acknowledged = true
                state.stats.acknowledged[key, default: 0] += 1
            }
            state.purchases[token] = purchase
            return .json(200, .object(JSONObject()))
        }
    }

    func voided(package: String, query: String) -> ServerReply {
        state.withLock { state -> ServerReply in
            state.stats.voidedListRequests += 1
            let voided = state.purchases.values.filter { $0.package == package && $0.voided != nil }.sorted { $0.registered < $1.registered }
            // As Google: a start more than 30 days back, or an end in the future, is refused.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            if let startTime = MockAppStore.queryValue("startTime", in: query).flatMap(Int64.init), startTime < now - 30 * 86_400_000 {
                return Self.error(400, "invalid", "startTime is too far in the past.")
            }
            if let endTime = MockAppStore.queryValue("endTime", in: query).flatMap(Int64.init), endTime > now + 1000 {
                return Self.error(400, "invalid", "endTime cannot be in the future.")
            }
            let start = MockAppStore.queryValue("token", in: query).flatMap(Int.init) ?? 0
            let size = min(1000, max(1, MockAppStore.queryValue("maxResults", in: query).flatMap(Int.init) ?? 1000))
            guard start >= 0, start <= voided.count else { return Self.error(400, "invalid", "Invalid Value") }
            let end = min(voided.count, start + size)
            let page: [JSONValue] = voided[start..<end].map { purchase in
                var object = JSONObject([
                    "kind": .string("androidpublisher#voidedPurchase"), "purchaseToken": .string(purchase.token),
                    "orderId": purchase.fields["orderId"] ?? .null,
                ])
                for member in purchase.voided?.members ?? [] { object[member.key] = member.value }
                return .object(object)
            }
            var answer = JSONObject(["voidedPurchases": .array(page)])
            if end < voided.count { answer["tokenPagination"] = .object(JSONObject(["nextPageToken": .string(String(end))])) }
            return .json(200, .object(answer))
        }
    }

    // MARK: - Scripting

    /// `POST /_mock/googleplay/purchases`.
    func register(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body), case .array(let list)? = object["purchases"] else {
            return .json(400, .object(JSONObject(["error": .string("expected {\"purchases\": [...]}")])))
        }
        var purchases: [Purchase] = []
        for value in list {
            guard case .object(var fields) = value, let token = fields["token"]?.stringValue, let package = fields["package"]?.stringValue,
                let product = fields["product"]?.stringValue
            else {
                return .json(400, .object(JSONObject(["error": .string("each purchase needs token, package and product")])))
            }
            var states = [Int(fields["purchaseState"]?.int64Value ?? 0)]
            if let list = fields["states"]?.arrayValue { states = list.compactMap { $0.int64Value.map(Int.init) } }
            guard !states.isEmpty else { return .json(400, .object(JSONObject(["error": .string("states is empty")]))) }
            let status = fields["status"]?.int64Value.map(Int.init)
            let reason = fields["reason"]?.stringValue
            let acknowledged = fields["acknowledgementState"]?.int64Value == 1
            let consumed = fields["consumptionState"]?.int64Value == 1
            let voided = fields["voided"]?.objectValue
            let subscription = fields["subscription"]?.boolValue ?? false
            let orderStatus = fields["orderStatus"]?.int64Value.map(Int.init)
            for key in [
                "token", "package", "product", "states", "purchaseState", "status", "reason", "acknowledgementState", "consumptionState", "voided",
                "subscription", "orderStatus",
            ] {
                fields[key] = nil
            }
            purchases.append(Purchase(
                token: token, package: package, product: product, states: states, fields: fields, status: status, reason: reason,
                acknowledged: acknowledged, consumed: consumed, voided: voided, registered: 0, subscription: subscription, orderStatus: orderStatus))
        }
        state.withLock { state in
            for var purchase in purchases {
                state.registrations += 1
                purchase.registered = state.registrations
                state.purchases[purchase.token] = purchase
            }
        }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    /// `POST /_mock/googleplay/config`.
    func configure(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body) else {
            return .json(400, .object(JSONObject(["error": .string("the body must be a JSON object")])))
        }
        state.withLock { state in
            if let seconds = object["expires_in"]?.int64Value { state.expiresIn = Int(seconds) }
            if let milliseconds = object["token_lifetime_ms"]?.int64Value { state.tokenLifetime = Double(milliseconds) / 1000 }
        }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    /// `POST /_mock/googleplay/revoke-tokens`: every token issued so far is refused from now on.
    func revokeTokens() -> ServerReply {
        state.withLock { $0.tokens.removeAll() }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    // MARK: - Helpers

    /// Google's error body.
    /// What Google's front end answers for a URL that is no API method: an HTML page.
    static let notFoundPage = ServerReply(
        status: 404, headers: [HTTPHeader("Content-Type", "text/html; charset=UTF-8")],
        body: Array("<!DOCTYPE html>\n<html lang=en><title>Error 404 (Not Found)!!1</title><p><b>404.</b> <ins>That’s an error.</ins>\n".utf8))

    static func error(_ status: Int, _ reason: String, _ message: String, status statusText: String? = nil) -> ServerReply {
        .json(status, .object(JSONObject([
            "error": .object(JSONObject([
                "code": .integer(status), "message": .string(message),
                "errors": .array([.object(JSONObject(["message": .string(message), "domain": .string("androidpublisher"), "reason": .string(reason)]))]),
                "status": statusText.map(JSONValue.string),
            ])),
        ])))
    }

    static func reason(for status: Int) -> String {
        switch status {
        case 410: "purchaseTokenNoLongerValid"
        case 404: "purchaseTokenNotFound"
        case 403: "permissionDenied"
        case 401: "permissionDenied"
        case 429: "rateLimitExceeded"
        case 409: "concurrentUpdate"
        default: "backendError"
        }
    }

    /// An `application/x-www-form-urlencoded` body.
    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let decode = { (part: Substring) in String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part) }
            fields[decode(parts[0])] = decode(parts[1])
        }
        return fields
    }
}
