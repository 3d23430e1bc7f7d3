import Foundation
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Google Play voided purchases (voidedpurchases.list, and pushes that ask for it)")
struct PlayVoidedPurchaseTests {
    typealias F = RuleFixtures

    @Test("Google's sample page parses: strings for numbers, both records, the next page's token")
    func samplePage() throws {
        let page = try PlayVoidedPurchase.parsePage(Fixtures.bytes("google-play/voidedpurchases-list-response.json"))
        #expect(page.nextPageToken == "next_page_token")
        #expect(page.purchases == [
            PlayVoidedPurchase(
                purchaseToken: "some_purchase_token", orderID: "some_order_id", purchaseTimeMilliseconds: 1_468_825_200_000,
                voidedTimeMilliseconds: 1_469_430_000_000, voidedSource: 0, voidedReason: 4),
            PlayVoidedPurchase(
                purchaseToken: "some_other_purchase_token", orderID: "some_other_order_id", purchaseTimeMilliseconds: 1_468_825_100_000,
                voidedTimeMilliseconds: 1_470_034_800_000, voidedSource: 2, voidedReason: 5),
        ])
        // Numbers as the discovery document types them; an empty list, and no more pages.
        let numeric = try PlayVoidedPurchase.parsePage(Array(#"{"voidedPurchases":[{"purchaseToken":"t","voidedTimeMillis":5,"voidedSource":1,"voidedReason":7,"voidedQuantity":2}]}"#.utf8))
        #expect(numeric.purchases.only == PlayVoidedPurchase(purchaseToken: "t", voidedTimeMilliseconds: 5, voidedSource: 1, voidedReason: 7, voidedQuantity: 2))
        #expect(numeric.nextPageToken == nil)
        #expect(try PlayVoidedPurchase.parsePage(Array("{}".utf8)) == PlayVoidedPurchase.Page(purchases: [], nextPageToken: nil))
    }

    @Test("a record that cannot be used makes the page unreadable (skipping it would move the checkpoint past it), naming what, never the token")
    func brokenPages() {
        let cases: [(String, String)] = [
            ("[]", "the voided purchases answer is not a JSON object"),
            (#"{"voidedPurchases":{}}"#, "\"voidedPurchases\" is not an array"),
            (#"{"voidedPurchases":[{"voidedTimeMillis":"1"}]}"#, "voided purchase 1 has no usable \"purchaseToken\""),
            (#"{"voidedPurchases":[{"purchaseToken":"secret-token-1","voidedTimeMillis":"soon"}]}"#, "voided purchase 1 has no whole-number \"voidedTimeMillis\""),
            (#"{"voidedPurchases":[{"purchaseToken":"secret-token-1","voidedTimeMillis":"1","voidedReason":"chargeback"}]}"#,
             "voided purchase 1's \"voidedReason\" is not a whole number"),
            (#"{"voidedPurchases":[{"purchaseToken":"secret-token-1","voidedTimeMillis":"1","orderId":"GPA\n1"}]}"#,
             "voided purchase 1's \"orderId\" is not a short printable string"),
            (#"{"tokenPagination":{"nextPageToken":"a\u0000b"}}"#, "\"nextPageToken\" is not a short printable string"),
        ]
        for (body, message) in cases {
            #expect(throws: PlayVoidedPurchase.Unparseable(description: message), "\(body)") { try PlayVoidedPurchase.parsePage(Array(body.utf8)) }
        }
    }

    @Test("kept as a notification: id from the token's digest and voided time, matched by the purchase's claim key; chargeback when Google voided it or says so, refunded otherwise")
    func asNotification() {
        let voided = PlayVoidedPurchase(purchaseToken: "tok", orderID: "GPA.1", voidedTimeMilliseconds: 1_800_000_000_000, voidedSource: 0, voidedReason: 1)
        let notification = StoreNotification.playVoided(voided, tokenDigest: "abc", via: .poll)
        #expect(notification.source == .googlePlay && notification.type == "VOIDED_PURCHASE" && notification.subtype == "USER")
        #expect(notification.notificationID == "voided:abc:1800000000000" && notification.transactionID == "google:GPA.1")
        #expect(notification.revokedAt == F.t0 && notification.signedAt == F.t0 && notification.revocationReason == 1)
        #expect(notification.effect == .revoke(reason: .refunded))
        #expect(!"\(notification)".contains("tok\""), "the token itself is not kept")
        var promo = voided
        promo.orderID = nil
        #expect(StoreNotification.playVoided(promo, tokenDigest: "abc", via: .poll).transactionID == "google-token:abc")
        for (source, reason, effect) in [(2, 5, ReasonCode.chargeback), (0, 7, .chargeback), (1, 0, .refunded), (0, 8, .refunded)] {
            var other = voided
            other.voidedSource = source
            other.voidedReason = reason
            #expect(StoreNotification.playVoided(other, tokenDigest: "abc", via: .poll).effect == .revoke(reason: effect), "\(source) \(reason)")
        }
    }

    @Test("a push is recorded and changes nothing: only the list it asks to read does")
    func pushChangesNothing() throws {
        let push = PlayNotification(
            messageID: "136969346945", packageName: "com.example.game", eventTimeMilliseconds: 1_800_000_000_000,
            kind: .voided(purchaseToken: "tok", orderID: "GPA.1", productType: 2, refundType: 1))
        let kept = StoreNotification.playPush(push)
        #expect(kept.notificationID == "pubsub:136969346945" && kept.type == "voidedPurchaseNotification" && kept.subtype == "FULL_REFUND")
        #expect(kept.transactionID == nil && kept.effect == .none && kept.signedAt == F.t0)
        #expect(try NotificationRules.apply(kept, to: F.record(.finished), now: F.now, lookups: FixedLookups()) == (nil, .recorded))
        #expect(push.isVoided)
        let test = PlayNotification(messageID: "1", packageName: "com.example.game", kind: .test)
        #expect(!test.isVoided && StoreNotification.playPush(test).type == "testNotification")
    }

    @Test("a listed voided purchase revokes its finished Google Play order and tells the merchant, store google_play")
    func revokesPlayOrder() throws {
        let voided = PlayVoidedPurchase(purchaseToken: "tok", orderID: "GPA.1", voidedTimeMilliseconds: 1_800_000_000_000, voidedSource: 2, voidedReason: 7)
        let order = F.record(.finished, proof: OrderProof(purchaseToken: "tok", packageName: "com.example.game"))
        let (plan, outcome) = try NotificationRules.apply(
            StoreNotification.playVoided(voided, tokenDigest: "abc", via: .poll), to: order, now: F.now, lookups: FixedLookups())
        #expect(outcome == .applied(orderID: "A1", from: .finished, to: .revoked))
        let written = try #require(plan)
        #expect(written.record.reason == .chargeback)
        #expect(written.transitions.only?.reason.detail?.contains("Google Play VOIDED_PURCHASE, transaction google:GPA.1") == true)
        let body = try JSONParser().parse(Array(try #require(written.outbox.only).payload.utf8))
        #expect(body["store"]?.stringValue == "google_play" && body["reason"]?.stringValue == "chargeback")
        #expect(body["revoked_at"]?.stringValue == "2027-01-15T08:00:00Z")
        // Not yet delivered: rejected `refunded`, nothing owed to the merchant.
        let (pending, _) = try NotificationRules.apply(
            StoreNotification.playVoided(voided, tokenDigest: "abc", via: .poll), to: F.record(.pending), now: F.now, lookups: FixedLookups())
        #expect(pending?.record.state == .rejected && pending?.record.reason == .refunded && pending?.outbox.isEmpty == true)
    }
}
