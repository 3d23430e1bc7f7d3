import Foundation
import ReconcileFoundation

/// The answer to Cloud Pub/Sub's `POST /v1/{subscription}:pull` (DESIGN §5b;
/// `docs/protocols/google-play.md` §6): the Play real-time developer notifications waiting on the
/// subscription, each with the `ackId` that acknowledges this delivery of it. `{}` means none.
///
/// Only the envelope is read here; each message's `data` (a `DeveloperNotification`) is left to
/// the caller. Refusals never quote a message's data.
public struct PubSubPullAnswer: Sendable, Hashable {
    /// One delivery of one message (`receivedMessages[]`).
    public struct Message: Sendable, Hashable {
        /// Acknowledges this delivery; a redelivery of the same message carries another one.
        public var ackID: String
        /// Pub/Sub's `messageId`: the same on every delivery, and the same a push would carry.
        public var messageID: String
        /// `message.data`, base64-decoded.
        public var data: [UInt8]
        /// `message.publishTime`; `nil` when absent or not RFC 3339.
        public var publishTime: Date?
        /// `deliveryAttempt` (set by Pub/Sub only with a dead-letter policy).
        public var deliveryAttempt: Int?

        public init(ackID: String, messageID: String, data: [UInt8], publishTime: Date? = nil, deliveryAttempt: Int? = nil) {
            self.ackID = ackID
            self.messageID = messageID
            self.data = data
            self.publishTime = publishTime
            self.deliveryAttempt = deliveryAttempt
        }
    }

    /// The messages, in the order Pub/Sub sent them.
    public var messages: [Message]

    public init(messages: [Message]) {
        self.messages = messages
    }

    /// Pub/Sub hands out at most this many messages a pull.
    public static let maximumMessages = 1000
    /// The longest `ackId` or `messageId` accepted, in bytes.
    public static let maximumIDBytes = 512

    /// Why a pull answer cannot be used (never quoting a message's data).
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses the body of a `:pull` answer. One unusable message makes the whole answer
    /// unusable: nothing in it is acknowledged, so Pub/Sub delivers it all again.
    public static func parse(_ body: [UInt8]) throws(Unparseable) -> PubSubPullAnswer {
        guard case .object(let object)? = try? JSONParser(maximumDepth: 16).parse(body) else {
            throw Unparseable(description: "the Pub/Sub pull answer is not a JSON object")
        }
        guard let list = object["receivedMessages"], list != .null else { return PubSubPullAnswer(messages: []) }
        guard case .array(let items) = list else { throw Unparseable(description: "\"receivedMessages\" is not an array") }
        guard items.count <= maximumMessages else {
            throw Unparseable(description: "the Pub/Sub pull answer has \(items.count) messages, more than \(maximumMessages)")
        }
        var messages: [Message] = []
        messages.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            let number = index + 1
            guard case .object(let received) = item else { throw Unparseable(description: "received message \(number) is not an object") }
            guard let ackID = identifier(received["ackId"]) else {
                throw Unparseable(description: "received message \(number) has no usable \"ackId\"")
            }
            guard case .object(let message)? = received["message"] else {
                throw Unparseable(description: "received message \(number) has no \"message\" object")
            }
            guard let messageID = identifier(message["messageId"]) else {
                throw Unparseable(description: "received message \(number) has no usable \"messageId\"")
            }
            guard let encoded = message["data"]?.stringValue else {
                throw Unparseable(description: "received message \(number) (messageId \(messageID)) has no \"data\"")
            }
            guard let data = Data(base64Encoded: encoded) else {
                throw Unparseable(description: "received message \(number) (messageId \(messageID)) has \"data\" that is not base64")
            }
            messages.append(Message(
                ackID: ackID, messageID: messageID, data: Array(data),
                publishTime: message["publishTime"]?.stringValue.flatMap(RFC3339.parse),
                deliveryAttempt: received["deliveryAttempt"]?.stringOrNumberText.flatMap { Int($0) }))
        }
        return PubSubPullAnswer(messages: messages)
    }

    /// The body of `POST /v1/{subscription}:acknowledge`: `{"ackIds":[…]}`.
    public static func acknowledgeBody(_ ackIDs: [String]) -> [UInt8] {
        JSONWriter.bytes(.object(JSONObject(["ackIds": .array(ackIDs.map(JSONValue.string))])))
    }

    /// The body of `POST /v1/{subscription}:pull`: `{"maxMessages":N}`.
    public static func pullBody(maxMessages: Int) -> [UInt8] {
        JSONWriter.bytes(.object(JSONObject(["maxMessages": .integer(maxMessages)])))
    }

    /// A non-empty string of printable ASCII, at most ``maximumIDBytes`` long (ids are logged).
    static func identifier(_ value: JSONValue?) -> String? {
        guard let text = value?.stringValue, !text.isEmpty, text.utf8.count <= maximumIDBytes,
            text.unicodeScalars.allSatisfy({ $0.isASCII && !PrintableText.isControl($0) })
        else { return nil }
        return text
    }
}
