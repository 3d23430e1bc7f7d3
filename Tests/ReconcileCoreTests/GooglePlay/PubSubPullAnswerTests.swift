import Foundation
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Pub/Sub pull answers (Play real-time developer notifications pulled, DESIGN §5b)")
struct PubSubPullAnswerTests {
    /// A `receivedMessages` entry; `nil` leaves a field out.
    static func received(
        ackID: String? = "ack-1", messageID: String? = "136969346945", data: String? = "e30=", deliveryAttempt: Int? = 1
    ) -> String {
        var message = JSONObject(["messageId": messageID.map(JSONValue.string), "data": data.map(JSONValue.string)])
        message["publishTime"] = .string("2026-11-30T07:26:06.123Z")
        return JSONWriter.string(.object(JSONObject([
            "ackId": ackID.map(JSONValue.string), "message": .object(message), "deliveryAttempt": deliveryAttempt.map { .integer($0) },
        ])))
    }

    static func answer(_ received: [String]) -> [UInt8] {
        Array(#"{"receivedMessages":[\#(received.joined(separator: ","))]}"#.utf8)
    }

    @Test("a real-shaped answer: two messages in order, data decoded, publishTime with nanoseconds, deliveryAttempt; attributes ignored")
    func twoMessages() throws {
        let notification = Fixtures.bytes("google-play/rtdn-one-time-product-purchased.json")
        let body = """
            {
              "receivedMessages": [
                {
                  "ackId": "RFAGFixdRkhRNxkIaFEOT14jPzUgKEUSAAgUBXx9cEFLdVhUcWhRDRlyfWB9aVsbCAUXU3cJURsHaE5tdR-s9J8xSW1PZnhqXxEIBUVUfF1fHg0bZmFdbnRBlbjZjeNyXF0ZCEVrh4z5tZRhZxEL8gpjYQ",
                  "message": {
                    "data": "\(Data(notification).base64EncodedString())",
                    "messageId": "136969346945",
                    "publishTime": "2026-11-30T07:26:06.123456789Z",
                    "attributes": {"key": "value"}
                  },
                  "deliveryAttempt": 1
                },
                {
                  "ackId": "second-ack",
                  "message": {"data": "eyJ2ZXJzaW9uIjoiMS4wIn0=", "messageId": "136969346946", "publishTime": "2026-11-30T07:26:07Z"},
                  "deliveryAttempt": "3"
                }
              ]
            }
            """
        let answer = try PubSubPullAnswer.parse(Array(body.utf8))
        #expect(answer.messages.count == 2)
        let first = try #require(answer.messages.first)
        #expect(first.ackID.hasPrefix("RFAGFixdRkhRNxkIaFEOT14jPzUg") && first.ackID.hasSuffix("L8gpjYQ"))
        #expect(first.messageID == "136969346945")
        #expect(first.data == notification)
        #expect(first.deliveryAttempt == 1)
        let publishTime = try #require(first.publishTime)
        #expect(abs(publishTime.timeIntervalSince1970 - 1_796_023_566.123_456_789) < 0.000_01)
        #expect(answer.messages.last == PubSubPullAnswer.Message(
            ackID: "second-ack", messageID: "136969346946", data: Array(#"{"version":"1.0"}"#.utf8),
            publishTime: Date(timeIntervalSince1970: 1_796_023_567), deliveryAttempt: 3))
    }

    @Test("no messages: {} (what Pub/Sub answers when nothing waits) and an empty list; no publishTime or deliveryAttempt is nil")
    func empty() throws {
        #expect(try PubSubPullAnswer.parse(Array("{}".utf8)).messages.isEmpty)
        #expect(try PubSubPullAnswer.parse(Array(#"{"receivedMessages":[]}"#.utf8)).messages.isEmpty)
        let bare = try PubSubPullAnswer.parse(Array(#"{"receivedMessages":[{"ackId":"a","message":{"data":"","messageId":"1"}}]}"#.utf8))
        #expect(bare.messages == [PubSubPullAnswer.Message(ackID: "a", messageID: "1", data: [], publishTime: nil, deliveryAttempt: nil)])
    }

    @Test("refused, naming the message and never its data: not an object, receivedMessages not an array, no usable ackId or messageId, data missing or not base64")
    func refusals() throws {
        let long = String(repeating: "x", count: 513)
        let cases: [(String, String)] = [
            ("[]", "the Pub/Sub pull answer is not a JSON object"),
            ("not json", "the Pub/Sub pull answer is not a JSON object"),
            ("", "the Pub/Sub pull answer is not a JSON object"),
            (#"{"receivedMessages":{}}"#, "\"receivedMessages\" is not an array"),
            (#"{"receivedMessages":"none"}"#, "\"receivedMessages\" is not an array"),
            (#"{"receivedMessages":["x"]}"#, "received message 1 is not an object"),
            (String(decoding: Self.answer([Self.received(ackID: nil)]), as: UTF8.self), "received message 1 has no usable \"ackId\""),
            (String(decoding: Self.answer([Self.received(), Self.received(ackID: "")]), as: UTF8.self), "received message 2 has no usable \"ackId\""),
            (#"{"receivedMessages":[{"ackId":7,"message":{"data":"","messageId":"1"}}]}"#, "received message 1 has no usable \"ackId\""),
            (String(decoding: Self.answer([Self.received(ackID: long)]), as: UTF8.self), "received message 1 has no usable \"ackId\""),
            (String(decoding: Self.answer([Self.received(ackID: "a\nb")]), as: UTF8.self), "received message 1 has no usable \"ackId\""),
            (#"{"receivedMessages":[{"ackId":"a"}]}"#, "received message 1 has no \"message\" object"),
            (String(decoding: Self.answer([Self.received(messageID: nil)]), as: UTF8.self), "received message 1 has no usable \"messageId\""),
            (String(decoding: Self.answer([Self.received(messageID: "")]), as: UTF8.self), "received message 1 has no usable \"messageId\""),
            (String(decoding: Self.answer([Self.received(messageID: long)]), as: UTF8.self), "received message 1 has no usable \"messageId\""),
            (#"{"receivedMessages":[{"ackId":"a","message":{"data":"","messageId":136969346945}}]}"#, "received message 1 has no usable \"messageId\""),
            (String(decoding: Self.answer([Self.received(data: nil)]), as: UTF8.self), "received message 1 (messageId 136969346945) has no \"data\""),
            (#"{"receivedMessages":[{"ackId":"a","message":{"data":{"k":1},"messageId":"9"}}]}"#, "received message 1 (messageId 9) has no \"data\""),
            (String(decoding: Self.answer([Self.received(data: "c2VjcmV0LXB1cmNoYXNlLXRva2Vu!!")]), as: UTF8.self),
             "received message 1 (messageId 136969346945) has \"data\" that is not base64"),
        ]
        for (body, message) in cases {
            #expect(throws: PubSubPullAnswer.Unparseable(description: message), "\(body.prefix(120))") {
                try PubSubPullAnswer.parse(Array(body.utf8))
            }
        }
        // The longest ids accepted: 512 bytes.
        let longest = String(repeating: "y", count: 512)
        #expect(try PubSubPullAnswer.parse(Self.answer([Self.received(ackID: longest, messageID: longest)])).messages.first?.ackID == longest)
        // Not the data, not even in a refusal about it.
        do {
            _ = try PubSubPullAnswer.parse(Self.answer([Self.received(data: "c2VjcmV0LXB1cmNoYXNlLXRva2Vu!!")]))
            Issue.record("bad base64 was accepted")
        } catch {
            #expect(!error.description.contains("c2VjcmV0"))
        }
    }

    @Test("more than 1000 messages is refused; 1000 are read")
    func tooMany() throws {
        let thousand = (0..<1000).map { Self.received(ackID: "ack-\($0)", messageID: String($0)) }
        #expect(try PubSubPullAnswer.parse(Self.answer(thousand)).messages.map(\.messageID) == (0..<1000).map(String.init))
        // (Not #expect(throws:), which would print all 1001 messages when it fails.)
        do {
            let answer = try PubSubPullAnswer.parse(Self.answer(thousand + [Self.received(ackID: "one-more", messageID: "1000")]))
            Issue.record("an answer of \(answer.messages.count) messages was read")
        } catch {
            #expect(error == PubSubPullAnswer.Unparseable(description: "the Pub/Sub pull answer has 1001 messages, more than 1000"))
        }
    }

    @Test("request bodies: {\"maxMessages\":N} and {\"ackIds\":[…]}, escaped as JSON")
    func requestBodies() throws {
        #expect(String(decoding: PubSubPullAnswer.pullBody(maxMessages: 10), as: UTF8.self) == #"{"maxMessages":10}"#)
        #expect(String(decoding: PubSubPullAnswer.acknowledgeBody(["a-1", "b-2"]), as: UTF8.self) == #"{"ackIds":["a-1","b-2"]}"#)
        #expect(String(decoding: PubSubPullAnswer.acknowledgeBody([]), as: UTF8.self) == #"{"ackIds":[]}"#)
        let odd = ["quote\"back\\slash", "ünï"]
        #expect(try JSONParser().parse(PubSubPullAnswer.acknowledgeBody(odd))["ackIds"] == .array(odd.map(JSONValue.string)))
    }
}
