import Foundation
import ReconcileFoundation
import Testing
@testable import ReconcileCore

/// Support's look-ups by the customer's store order id (DESIGN §5b): the id as a person types it,
/// the stores' answers read strictly where a decision rests, `recover`'s rule, and the JSON that
/// never shows a proof.
@Suite("Store order look-ups")
struct StoreOrderLookupTests {
    @Test("a store order id: App Store letters and digits, Google Play GPA.…; anything else named in the error")
    func storeOrderIDs() throws {
        #expect(try StoreOrderID.parse("MK5TTV4XYZ") == .appStore("MK5TTV4XYZ"))
        #expect(try StoreOrderID.parse("  mk5ttv4xyz\n") == .appStore("MK5TTV4XYZ"))
        #expect(try StoreOrderID.parse("GPA.3312-4455-6677-88990") == .googlePlay("GPA.3312-4455-6677-88990"))
        #expect(try StoreOrderID.parse("gpa.3312-4455-6677-88990..0") == .googlePlay("GPA.3312-4455-6677-88990..0"))
        for bad in ["", "  ", "MK5/../x", "GPA.", "GPA.12ab", "order 42", "MK5TTV4XYZ\u{202E}", String(repeating: "A", count: 65)] {
            #expect(throws: StoreOrderID.Invalid.self, "\(bad.debugDescription)") { try StoreOrderID.parse(bad) }
        }
        let error = try #require(throws: StoreOrderID.Invalid.self) { try StoreOrderID.parse("MK5/x") }
        #expect(error.description.contains("MK5TTV4XYZ") && error.description.contains("GPA."))
    }

    @Test("Look Up Order ID: the signed transactions whatever the status says; no status, or not strings, is no answer")
    func appleAnswer() throws {
        #expect(try AppStoreDocument.orderLookup(Array(#"{"status":0,"signedTransactions":["a.b.c","d.e.f"]}"#.utf8)) == ["a.b.c", "d.e.f"])
        // Apple's own fixture: status 1 with transactions. Each is verified by the caller.
        #expect(try AppStoreDocument.orderLookup(Array(#"{"status":1,"signedTransactions":["a.b.c"]}"#.utf8)) == ["a.b.c"])
        #expect(try AppStoreDocument.orderLookup(Array(#"{"status":1}"#.utf8)).isEmpty)
        for bad in [#"{"signedTransactions":["a.b.c"]}"#, #"{"status":0,"signedTransactions":"a.b.c"}"#, #"{"status":0,"signedTransactions":[1]}"#, "[]", "nope"] {
            #expect(throws: AppStoreTransaction.Unparseable.self, "\(bad)") { try AppStoreDocument.orderLookup(Array(bad.utf8)) }
        }
    }

    @Test("the fixture from Apple's library (status 1 with transactions) gives its two transactions to verify")
    func appleFixture() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/app-store-notifications/look-up-order-id-response.json").path
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect(try AppStoreDocument.orderLookup(Array(data)) == ["signed_transaction_one", "signed_transaction_two"])
    }

    static let order = """
        {"orderId":"GPA.3312-4455-6677-88990","purchaseToken":"tok-SECRET","state":"REFUNDED",
         "lineItems":[{"productId":"gems_100","oneTimePurchaseDetails":{"quantity":1}},{"productId":"vip","subscriptionDetails":{"basePlanId":"m"}}],
         "createTime":"2026-11-30T10:00:00Z","lastEventTime":"2026-12-01T10:00:00.5Z",
         "orderHistory":{"refundEvents":[{"eventTime":"2026-12-01T09:00:00Z"}]}}
        """

    @Test("orders.get: token, state, line items (a subscription's marked), refund time; strict where a decision rests")
    func playOrder() throws {
        let order = try PlayOrder.parse(Array(Self.order.utf8))
        #expect(order.orderID == "GPA.3312-4455-6677-88990" && order.purchaseToken == "tok-SECRET" && order.state == .refunded)
        #expect(order.lineItems == [.init(productID: "gems_100", isSubscription: false), .init(productID: "vip", isSubscription: true)])
        #expect(order.refundedAt == RFC3339.parse("2026-12-01T09:00:00Z") && order.createdAt == RFC3339.parse("2026-11-30T10:00:00Z"))
        #expect(try PlayOrder.parse(Array(#"{"orderId":"G","purchaseToken":"t","state":"NEW_STATE","lineItems":[{"productId":"p"}]}"#.utf8)).state == .other("NEW_STATE"))
        for bad in [
            #"{"purchaseToken":"t","state":"PROCESSED","lineItems":[{"productId":"p"}]}"#,
            #"{"orderId":"G","state":"PROCESSED","lineItems":[{"productId":"p"}]}"#,
            #"{"orderId":"G","purchaseToken":"t","lineItems":[{"productId":"p"}]}"#,
            #"{"orderId":"G","purchaseToken":"t","state":"PROCESSED","lineItems":[]}"#,
            #"{"orderId":"G","purchaseToken":"t","state":"PROCESSED","lineItems":[{"quantity":1}]}"#,
            #"{"orderId":"G","purchaseToken":"t t","state":"PROCESSED","lineItems":[{"productId":"p"}]}"#,
            #"{"orderId":"G","orderId":"H","purchaseToken":"t","state":"PROCESSED","lineItems":[{"productId":"p"}]}"#,
        ] {
            #expect(throws: PlayOrder.Unparseable.self, "\(bad)") { try PlayOrder.parse(Array(bad.utf8)) }
        }
    }

    @Test("a Play order's purchase: its state from the order, Google's purchase state winning when they disagree; refunded counts as revoked")
    func playPurchase() throws {
        var order = try PlayOrder.parse(Array(Self.order.utf8))
        var purchase = PlayPurchase(purchaseState: PlayPurchase.purchased, orderID: "GPA.3312-4455-6677-88990", purchaseTimeMilliseconds: 1_000)
        purchase.obfuscatedExternalAccountID = "acct-1"
        let refunded = LookedUpPurchase.googlePlay(order, item: order.lineItems[0], purchase: purchase, package: "com.example.app", tokenDigest: "d")
        #expect(refunded.state == .refunded && refunded.purchase.revokedAt == RFC3339.parse("2026-12-01T09:00:00Z"))
        #expect(refunded.purchase.transactionKey == "google:GPA.3312-4455-6677-88990" && refunded.purchase.accountToken == "acct-1")
        order.state = .processed
        purchase.purchaseState = PlayPurchase.pending
        #expect(LookedUpPurchase.googlePlay(order, item: order.lineItems[0], purchase: purchase, package: "com.example.app", tokenDigest: "d").state == .pending)
    }

    static func found(_ state: LookedUpPurchase.State = .purchased, account: String? = "acct", test: Bool = false, subscription: Bool = false) -> LookedUpPurchase {
        let purchase = DiscoveredPurchase(
            store: .appStore, transactionKey: "2000000777", productID: "gems", accountToken: account,
            proof: OrderProof(transactionID: "2000000777", signedTransaction: "eyJ.SECRET-JWS.sig"), isSubscription: subscription, via: .recover)
        return LookedUpPurchase(purchase: purchase, state: state, isTest: test)
    }

    @Test("recover: held first (so a second run says so), then subscriptions, anything not purchased, test purchases, the account")
    func recoverRule() {
        let rule = { (found: LookedUpPurchase, holder: String?, user: String?, tests: Bool) in
            DiscoveryRules.recover(found, holder: holder, known: nil, user: user, allowTestPurchases: tests)
        }
        #expect(rule(Self.found(.refunded), "M-1", nil, false) == .leaves(.heldBy(orderID: "M-1")))
        #expect(rule(Self.found(subscription: true), nil, "u", false) == .leaves(.ignored(.subscription)))
        for state in LookedUpPurchase.State.allCases where state != .purchased {
            #expect(rule(Self.found(state), nil, "u", false) == .leaves(.notPaid(state)))
        }
        #expect(rule(Self.found(test: true), nil, "u", false) == .leaves(.testPurchase))
        #expect(rule(Self.found(account: nil), nil, nil, false) == .leaves(.noAccount))
        guard case .makes(let order) = rule(Self.found(account: nil, test: true), nil, "user-9", true) else {
            Issue.record("a test purchase with AllowTestPurchases=yes and --user is made an order")
            return
        }
        #expect(order.origin == .operator && order.submission.orderID == "apple:2000000777" && order.submission.applicationUsername == "user-9")
        #expect(DiscoveryRules.recover(Self.found(), holder: nil, known: .becameOrder(orderID: "apple:2000000777"), user: nil, allowTestPurchases: false)
            == .leaves(.heldBy(orderID: "apple:2000000777")))
    }

    @Test("lookup and recover JSON: every field, never the proof; a refund and a left purchase say so in words")
    func json() {
        var found = Self.found(.refunded)
        found.heldBy = nil
        found.refundedAt = Date(timeIntervalSince1970: 1_800_000_000)
        let text = JSONWriter.string(RecoveredPurchase(found: found, result: .left(.notPaid(.refunded))).json)
        #expect(!text.contains("SECRET"))
        let object = (try? JSONParser().parse(Array(text.utf8)))?.objectValue
        #expect(object?["state"]?.stringValue == "refunded" && object?["left"]?.stringValue == "refunded")
        #expect(object?["refunded_at"]?.stringValue == "2027-01-15T08:00:00Z" && object?["held_by"] == .null && object?["made"] == .null)
        #expect(object?["why"]?.stringValue == "the store says refunded: the money was taken back")
        let keys = Set(object?.members.map(\.key) ?? [])
        #expect(keys == [
            "store", "transaction", "product_id", "kind", "state", "test", "purchased_at", "refunded_at", "account", "held_by", "discovered", "made", "left", "why",
        ])
    }
}
