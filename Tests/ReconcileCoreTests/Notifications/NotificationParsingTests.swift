import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

@Suite("Store notifications: parsing (the payloads only; signatures are checked in ReconcileCrypto)")
struct NotificationParsingTests {
    @Test("App Store: every payload shape of Apple's test data parses; data carries the transaction and the consumption reason")
    func appStorePayloads() throws {
        let consumption = try AppStoreNotification.parse(Fixtures.bytes("app-store-notifications/decoded-notification-consumption-request.json"))
        #expect(consumption.id == "002e14d5-51f5-4503-b5a8-c3a1af68eb20" && consumption.type == AppStoreNotification.consumptionRequest)
        #expect(consumption.bundleID == "com.example" && consumption.appAppleID == "41234" && consumption.environment == "LocalTesting")
        #expect(consumption.signedTransactionInfo == "signed_transaction_info_value")
        #expect(consumption.consumptionRequestReason == "UNINTENDED_PURCHASE" && consumption.signedDateMilliseconds == 1_698_148_900_000)
        let subscribed = try AppStoreNotification.parse(Fixtures.bytes("app-store-notifications/decoded-notification-subscribed.json"))
        #expect(subscribed.type == "SUBSCRIBED" && subscribed.subtype == "INITIAL_BUY")
        for name in ["decoded-notification-summary.json", "decoded-notification-external-purchase-token.json"] {
            let other = try AppStoreNotification.parse(Fixtures.bytes("app-store-notifications/\(name)"))
            #expect(other.signedTransactionInfo == nil && other.bundleID != nil, "\(name)")
        }
    }

    @Test("App Store: a payload without its id or type is refused, naming what is missing")
    func appStoreRefusals() {
        let cases: [(String, String)] = [
            (#"{"notificationType":"REFUND"}"#, "the notification has no \"notificationUUID\""),
            (#"{"notificationUUID":"a"}"#, "the notification has no \"notificationType\""),
            (#"[1]"#, ""),
        ]
        for (text, message) in cases {
            do {
                _ = try AppStoreNotification.parse(Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch {
                if !message.isEmpty { #expect(error.description == message) }
            }
        }
    }

    func push(_ notification: String, messageID: String = "136969346945") -> [UInt8] {
        let data = Data(notification.utf8).base64EncodedString()
        return Array(#"{"message":{"attributes":{},"data":"\#(data)","messageId":"\#(messageID)"},"subscription":"projects/p/subscriptions/s"}"#.utf8)
    }

    @Test("Play: voided, one-time product and test notifications in a Pub/Sub push; eventTimeMillis as a string or a number")
    func playNotifications() throws {
        let voided = try PlayNotification.parse(push(String(decoding: Fixtures.bytes("google-play/rtdn-voided-purchase.json"), as: UTF8.self)))
        #expect(voided.messageID == "136969346945" && voided.packageName == "com.some.app" && voided.eventTimeMilliseconds == 1_503_349_566_168)
        #expect(voided.kind == .voided(purchaseToken: "PURCHASE_TOKEN", orderID: "GS.0000-0000-0000", productType: 1, refundType: 1))
        let product = try PlayNotification.parse(push(String(decoding: Fixtures.bytes("google-play/rtdn-one-time-product-purchased.json"), as: UTF8.self)))
        guard case .oneTimeProduct(let type, _, _) = product.kind else { Issue.record("\(product.kind)"); return }
        #expect(type == 1)
        let test = try PlayNotification.parse(push(String(decoding: Fixtures.bytes("google-play/rtdn-test-notification.json"), as: UTF8.self)))
        #expect(test.kind == .test)
        let numeric = try PlayNotification.parse(push(#"{"packageName":"a.b","eventTimeMillis":42,"subscriptionNotification":{}}"#, messageID: "7"))
        #expect(numeric.eventTimeMilliseconds == 42 && numeric.kind == .other("subscriptionNotification"))
    }

    @Test("Play: a pulled message's data reads as the same notification its push would carry")
    func pulledData() throws {
        let data = Fixtures.bytes("google-play/rtdn-one-time-product-purchased.json")
        let pulled = try PlayNotification.parse(data: data, messageID: "136969346945")
        #expect(pulled == (try PlayNotification.parse(push(String(decoding: data, as: UTF8.self)))))
        #expect(throws: PlayNotification.Unparseable.self) { try PlayNotification.parse(data: Array("not json".utf8), messageID: "1") }
    }

    @Test("Play: Google's own envelope sample (its data is a schema sketch, not JSON) and other broken pushes are refused")
    func playRefusals() {
        for (body, message) in [
            (Fixtures.bytes("google-play/rtdn-pubsub-push-envelope.json"), "the Pub/Sub message's data is not a JSON object"),
            (Array(#"{"message":{"data":"%%%","messageId":"1"}}"#.utf8), "the Pub/Sub message's \"data\" is not base64"),
            (Array(#"{"message":{"data":"e30="}}"#.utf8), "the Pub/Sub message has no usable \"messageId\""),
            (Array(#"{"subscription":"x"}"#.utf8), "the Pub/Sub push has no \"message\" object"),
            (push(#"{"voidedPurchaseNotification":{"orderId":"GPA.1"}}"#), "the voided purchase notification has no \"purchaseToken\""),
        ] {
            do {
                _ = try PlayNotification.parse(body)
                Issue.record("accepted \(String(decoding: body, as: UTF8.self))")
            } catch {
                #expect(error.description == message)
            }
        }
    }

    @Test("spool files are sorted by their keys: orders, App Store notifications, Play pushes")
    func classify() {
        #expect(SpoolDocument.classify(Array(#"{"order_id":"A","product_id":"p"}"#.utf8)) == .order)
        #expect(SpoolDocument.classify(Array(#"{"signedPayload":"a.b.c"}"#.utf8)) == .appStoreNotification)
        #expect(SpoolDocument.classify(Fixtures.bytes("google-play/rtdn-pubsub-push-envelope.json")) == .playNotification)
        #expect(SpoolDocument.classify(Array("not json".utf8)) == .order)
        #expect(SpoolDocument.classify(Array(#"{"order_id":"A","signedPayload":"x"}"#.utf8)) == .order, "an order that happens to carry the key")
    }
}
