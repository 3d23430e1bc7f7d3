import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// Cloud Pub/Sub *pull* as the mock plays it, for Play real-time developer notifications (DESIGN
/// §5b): a test publishes messages to a subscription, the daemon pulls and acknowledges them.
/// Part of ``MockGooglePlay``, whose token endpoint issues the access tokens: a request needs
/// one granted the `https://www.googleapis.com/auth/pubsub` scope (401 without a valid token, 403
/// without the scope).
///
/// | path | answer |
/// |---|---|
/// | `POST /pubsub/v1/projects/{p}/subscriptions/{s}:pull` `{"maxMessages": 1…1000}` | `{"receivedMessages": [{"ackId", "message": {"data", "messageId", "publishTime", "attributes"}, "deliveryAttempt"}]}`, or `{}` when none waits |
/// | `POST /pubsub/v1/projects/{p}/subscriptions/{s}:acknowledge` `{"ackIds": […]}` | `{}` |
/// | `POST /_mock/pubsub/publish` | enqueue messages (below) |
/// | `POST /_mock/pubsub/config` | `{"fail_acknowledge": true\|false, "fail_pull_status": 503\|null}` |
///
/// Delivery: a pull hands out, in publish order, up to `maxMessages` messages that are neither
/// acknowledged nor outstanding. Each delivery gets a fresh `ackId` and the next
/// `deliveryAttempt` (1, 2, …; the real service sets it only with a dead-letter policy), and makes
/// the message outstanding for the ack deadline (``defaultAckDeadline``, `--pubsub-ack-deadline`);
/// once that passes unacknowledged, the next pull delivers it again.
///
/// Acknowledgement: an `ackId` counts only if it is its message's latest delivery's and that
/// delivery's deadline has not passed; any other (an earlier delivery's, an expired one, an
/// unknown one) is ignored without an error, as Pub/Sub does. An acknowledged message is never
/// delivered again.
///
/// Publishing: `{"subscription": "projects/p/subscriptions/s", "messages": [{"data": "<base64>"
/// or "json": {…}, "messageId": "…", "attributes": {…}, "publishTime": "…"}]}` creates the
/// subscription if need be (an empty `messages` only creates it) and answers
/// `{"messageIds": […]}`. `data` is passed on as given (so a test can send data that is not
/// base64); `json` is an object the mock writes and base64-encodes. A `messageId` not given is
/// generated, unique; one given is used as is (the same id twice makes two messages, as a
/// publisher's retry does).
///
/// Counters (``MockStats``): `pubsubPulls` (every `:pull` that got past authentication, failed
/// or not), `pubsubDelivered` and `pubsubAcknowledged` per `messageId`.
public final class MockPubSub: Sendable {
    /// Pub/Sub's default ack deadline.
    public static let defaultAckDeadline: TimeInterval = 10
    /// The most messages one pull may ask for.
    public static let maximumMessages = 1000

    /// One published message and its deliveries.
    struct Message {
        var messageID: String
        /// Base64 text, as published.
        var data: String
        var attributes: JSONObject?
        var publishTime: String
        var deliveries = 0
        /// The latest delivery's `ackId`, and until when it may be acknowledged.
        var ackID: String?
        var outstandingUntil: Date?
        var acknowledged = false
    }

    struct Subscription {
        var messages: [Message] = []
        /// The latest delivery's `ackId` of each outstanding message → its index in `messages`.
        var outstanding: [String: Int] = [:]
    }

    struct State {
        var ackDeadline: TimeInterval
        var subscriptions: [String: Subscription] = [:]
        var failAcknowledge = false
        var failPullStatus: Int?
        var generatedIDs = 0
        var usedMessageIDs: Set<String> = []
        var deliveries = 0
    }

    /// Applies a change to the service's counters (given by ``MockService``).
    typealias Recorder = (_ change: (inout MockStats) -> Void) -> Void

    let state: Mutex<State>

    public init(ackDeadline: TimeInterval = MockPubSub.defaultAckDeadline) {
        self.state = Mutex(State(ackDeadline: ackDeadline))
    }

    /// How long a delivery stays outstanding.
    public var ackDeadline: TimeInterval { state.withLock { $0.ackDeadline } }

    /// Routes an authorized request under `/pubsub` (`path` is the rest: `/v1/projects/…`).
    func handle(_ request: ServerRequest, path: String, record: Recorder) -> ServerReply {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map { String($0).removingPercentEncoding ?? String($0) }
        // ["", "v1", "projects", project, "subscriptions", "name:verb"]
        guard parts.count == 6, parts[1] == "v1", parts[2] == "projects", !parts[3].isEmpty, parts[4] == "subscriptions",
            let colon = parts[5].lastIndex(of: ":"), colon != parts[5].startIndex
        else {
            return MockGooglePlay.notFoundPage
        }
        let subscription = "projects/\(parts[3])/subscriptions/\(parts[5][..<colon])"
        switch (request.method, String(parts[5][parts[5].index(after: colon)...])) {
        case ("POST", "pull"): return pull(request, subscription: subscription, record: record)
        case ("POST", "acknowledge"): return acknowledge(request, subscription: subscription, record: record)
        default: return MockGooglePlay.notFoundPage
        }
    }

    // MARK: - Pull and acknowledge

    func pull(_ request: ServerRequest, subscription name: String, record: Recorder) -> ServerReply {
        record { $0.pubsubPulls += 1 }
        if let status = state.withLock({ $0.failPullStatus }) {
            return Self.error(status, "The service was unable to fulfill your request. Please try again. (mock fail_pull_status)")
        }
        guard case .object(let body)? = try? JSONParser().parse(request.body) else {
            return Self.error(400, "Invalid JSON payload received.")
        }
        guard let maximum = body["maxMessages"]?.stringOrNumberText.flatMap({ Int($0) }), (1...Self.maximumMessages).contains(maximum) else {
            return Self.error(400, "maxMessages must be a whole number from 1 to \(Self.maximumMessages).")
        }
        let now = Date()
        let delivered = state.withLock { state -> (received: [JSONValue], ids: [String])? in
            guard var subscription = state.subscriptions[name] else { return nil }
            var received: [JSONValue] = []
            var ids: [String] = []
            for index in subscription.messages.indices where received.count < maximum {
                var message = subscription.messages[index]
                guard !message.acknowledged, message.outstandingUntil.map({ $0 <= now }) ?? true else { continue }
                if let old = message.ackID { subscription.outstanding[old] = nil }
                state.deliveries += 1
                let ackID = "mock-ack-\(state.deliveries)-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
                message.deliveries += 1
                message.ackID = ackID
                message.outstandingUntil = now.addingTimeInterval(state.ackDeadline)
                subscription.outstanding[ackID] = index
                subscription.messages[index] = message
                received.append(.object(JSONObject([
                    "ackId": .string(ackID),
                    "message": .object(JSONObject([
                        "data": .string(message.data), "messageId": .string(message.messageID), "publishTime": .string(message.publishTime),
                        "attributes": message.attributes.map(JSONValue.object),
                    ])),
                    "deliveryAttempt": .integer(message.deliveries),
                ])))
                ids.append(message.messageID)
            }
            state.subscriptions[name] = subscription
            return (received, ids)
        }
        guard let delivered else { return Self.notFound(name) }
        record { stats in
            for id in delivered.ids { stats.pubsubDelivered[id, default: 0] += 1 }
        }
        // As Pub/Sub: nothing waiting is an empty object, not an empty list.
        return .json(200, .object(delivered.received.isEmpty ? JSONObject() : JSONObject(["receivedMessages": .array(delivered.received)])))
    }

    func acknowledge(_ request: ServerRequest, subscription name: String, record: Recorder) -> ServerReply {
        if state.withLock({ $0.failAcknowledge }) {
            return Self.error(503, "The service was unable to fulfill your request. Please try again. (mock fail_acknowledge)")
        }
        guard case .object(let body)? = try? JSONParser().parse(request.body) else {
            return Self.error(400, "Invalid JSON payload received.")
        }
        guard case .array(let list)? = body["ackIds"], !list.isEmpty else { return Self.error(400, "No ack ids specified.") }
        let ackIDs = list.compactMap(\.stringValue)
        guard ackIDs.count == list.count else { return Self.error(400, "Invalid JSON payload received. \"ackIds\" holds a value that is not a string.") }
        let now = Date()
        let acknowledged = state.withLock { state -> [String]? in
            guard var subscription = state.subscriptions[name] else { return nil }
            var acknowledged: [String] = []
            for ackID in ackIDs {
                // Only the latest delivery's ackId, within its deadline; anything else is ignored.
                guard let index = subscription.outstanding[ackID], !subscription.messages[index].acknowledged,
                    subscription.messages[index].ackID == ackID, let until = subscription.messages[index].outstandingUntil, until > now
                else { continue }
                subscription.messages[index].acknowledged = true
                subscription.messages[index].outstandingUntil = nil
                subscription.outstanding[ackID] = nil
                acknowledged.append(subscription.messages[index].messageID)
            }
            state.subscriptions[name] = subscription
            return acknowledged
        }
        guard let acknowledged else { return Self.notFound(name) }
        record { stats in
            for id in acknowledged { stats.pubsubAcknowledged[id, default: 0] += 1 }
        }
        return .json(200, .object(JSONObject()))
    }

    // MARK: - Scripting

    /// `POST /_mock/pubsub/publish`.
    func publish(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body), let name = object["subscription"]?.stringValue,
            case .array(let list)? = object["messages"]
        else {
            return Self.scriptError("expected {\"subscription\": \"projects/P/subscriptions/S\", \"messages\": [...]}")
        }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", !parts[1].isEmpty, parts[2] == "subscriptions", !parts[3].isEmpty else {
            return Self.scriptError("the subscription must be projects/P/subscriptions/S")
        }
        struct Draft {
            var data: String
            var messageID: String?
            var attributes: JSONObject?
            var publishTime: String?
        }
        var drafts: [Draft] = []
        for (index, value) in list.enumerated() {
            guard case .object(let fields) = value else { return Self.scriptError("message \(index + 1) is not an object") }
            let data: String
            switch (fields["data"], fields["json"]) {
            case (.string(let text)?, nil): data = text
            case (nil, .object(let json)?): data = Data(JSONWriter.bytes(.object(json))).base64EncodedString()
            default: return Self.scriptError("message \(index + 1) needs either \"data\" (base64 text) or \"json\" (an object)")
            }
            var draft = Draft(data: data)
            if let id = fields["messageId"] {
                guard case .string(let text) = id, !text.isEmpty else { return Self.scriptError("message \(index + 1)'s messageId is not a string") }
                draft.messageID = text
            }
            if let attributes = fields["attributes"] {
                guard case .object(let members) = attributes else { return Self.scriptError("message \(index + 1)'s attributes is not an object") }
                draft.attributes = members
            }
            draft.publishTime = fields["publishTime"]?.stringValue
            drafts.append(draft)
        }
        let now = RFC3339.formatWithMilliseconds(Date())
        let ids = state.withLock { state -> [String] in
            var subscription = state.subscriptions[name] ?? Subscription()
            var ids: [String] = []
            for draft in drafts {
                var id: String
                if let given = draft.messageID {
                    id = given
                } else {
                    // Decimal, as Pub/Sub's are; never one already used.
                    repeat {
                        state.generatedIDs += 1
                        id = String(17_000_000_000_000_000 + state.generatedIDs)
                    } while state.usedMessageIDs.contains(id)
                }
                state.usedMessageIDs.insert(id)
                subscription.messages.append(Message(messageID: id, data: draft.data, attributes: draft.attributes, publishTime: draft.publishTime ?? now))
                ids.append(id)
            }
            state.subscriptions[name] = subscription
            return ids
        }
        return .json(200, .object(JSONObject(["messageIds": .array(ids.map(JSONValue.string))])))
    }

    /// `POST /_mock/pubsub/config`: `{"fail_acknowledge": true|false, "fail_pull_status": 503|null}`.
    func configure(_ request: ServerRequest) -> ServerReply {
        guard case .object(let object)? = try? JSONParser().parse(request.body) else {
            return Self.scriptError("the body must be a JSON object")
        }
        var failAcknowledge: Bool?
        var failPullStatus: Int??
        for member in object.members {
            switch (member.key, member.value) {
            case ("fail_acknowledge", .bool(let value)): failAcknowledge = value
            case ("fail_pull_status", .null): failPullStatus = .some(nil)
            case ("fail_pull_status", let value):
                guard let status = value.int64Value, (400...599).contains(status) else {
                    return Self.scriptError("fail_pull_status must be an HTTP error status (400…599) or null")
                }
                failPullStatus = .some(Int(status))
            case ("fail_acknowledge", _): return Self.scriptError("fail_acknowledge must be true or false")
            default: return Self.scriptError("unknown Pub/Sub setting \"\(member.key)\"")
            }
        }
        state.withLock { state in
            if let failAcknowledge { state.failAcknowledge = failAcknowledge }
            if let failPullStatus { state.failPullStatus = failPullStatus }
        }
        return .json(200, .object(JSONObject(["ok": .bool(true)])))
    }

    // MARK: - Helpers

    /// Pub/Sub's error body: `{"error":{"code","message","status"}}`.
    static func error(_ code: Int, _ message: String) -> ServerReply {
        .json(code, .object(JSONObject([
            "error": .object(JSONObject(["code": .integer(code), "message": .string(message), "status": .string(statusName(code))])),
        ])))
    }

    static func notFound(_ subscription: String) -> ServerReply {
        error(404, "Resource not found (resource=\(subscription.split(separator: "/").last.map(String.init) ?? subscription)).")
    }

    /// The canonical code Google's JSON errors name for an HTTP status.
    static func statusName(_ code: Int) -> String {
        switch code {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 409: "ALREADY_EXISTS"
        case 429: "RESOURCE_EXHAUSTED"
        case 499: "CANCELLED"
        case 501: "UNIMPLEMENTED"
        case 503: "UNAVAILABLE"
        case 504: "DEADLINE_EXCEEDED"
        default: code >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
        }
    }

    static func scriptError(_ message: String) -> ServerReply {
        .json(400, .object(JSONObject(["error": .string(message)])))
    }
}
