import Foundation
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Receipt matcher")
struct ReceiptMatcherTests {
    let t = Date(timeIntervalSince1970: 1_700_000_000)
    var ms: Int64 { Int64(t.timeIntervalSince1970 * 1000) }

    func key(_ orderID: String = "A1", product: String = "gems", transaction: String? = nil, user: String? = nil) -> ReceiptMatcher.OrderKey {
        ReceiptMatcher.OrderKey(orderID: orderID, productID: product, transactionID: transaction, applicationUsername: user, referenceTime: t)
    }

    func item(_ transaction: String, product: String = "gems", at offset: Int64 = 0, cancelled: Bool = false, token: String? = nil) -> AppleReceiptItem {
        AppleReceiptItem(
            productID: product, transactionID: transaction, purchaseDateMilliseconds: ms + offset,
            cancellationDateMilliseconds: cancelled ? ms + 999 : nil, appAccountToken: token)
    }

    @Test("several items of the same product: the one closest in time that is neither refunded nor claimed")
    func closestFreeItem() {
        let items = [item("1", at: -60_000), item("2", at: 5_000, cancelled: true), item("3", at: 10_000), item("4", at: -2_000), item("x", product: "other", at: 0)]
        #expect(ReceiptMatcher.match(items, for: key(), claims: [:]) == .matched(items[3]))
        #expect(ReceiptMatcher.match(items, for: key(), claims: ["4": "B7"]) == .matched(items[2]))
        #expect(ReceiptMatcher.match(items, for: key(), claims: ["4": "B7", "3": "B8", "1": "B9"])
            == .duplicateTransaction(transactionID: "1", claimant: "B9"))
    }

    @Test("an order's own claim does not count against it")
    func ownClaim() {
        let items = [item("1")]
        #expect(ReceiptMatcher.match(items, for: key("A1"), claims: ["1": "A1"]) == .matched(items[0]))
    }

    @Test("only refunded candidates: refunded; nothing at all: no matching purchase")
    func refundedAndNothing() {
        #expect(ReceiptMatcher.match([item("1", cancelled: true)], for: key(), claims: [:]) == .refunded)
        #expect(ReceiptMatcher.match([item("1", product: "other")], for: key(), claims: [:]) == .noMatchingPurchase)
        #expect(ReceiptMatcher.match([], for: key(), claims: [:]) == .noMatchingPurchase)
    }

    @Test("subscription renewals never match: only the initial purchase (transaction id = original) is an order's")
    func renewals() throws {
        let original = AppleReceiptItem(productID: "monthly", transactionID: "100", originalTransactionID: "100", purchaseDateMilliseconds: ms)
        let renewal1 = AppleReceiptItem(
            productID: "monthly", transactionID: "101", originalTransactionID: "100", purchaseDateMilliseconds: ms + 1_000)
        let renewal2 = AppleReceiptItem(
            productID: "monthly", transactionID: "102", originalTransactionID: "100", purchaseDateMilliseconds: ms + 2_000)
        #expect(!original.isRenewal && renewal1.isRenewal && renewal2.isRenewal)
        let items = [renewal2, renewal1, original]
        let key = key(product: "monthly")
        #expect(ReceiptMatcher.candidates(in: items, for: key) == [original])
        #expect(ReceiptMatcher.match(items, for: key, claims: [:]) == .matched(original))
        // A second and third order against the same receipt: the original is taken, the renewals
        // are no one's purchase.
        #expect(ReceiptMatcher.match(items, for: key, claims: ["100": "A0"]) == .duplicateTransaction(transactionID: "100", claimant: "A0"))
        #expect(ReceiptMatcher.match([renewal1, renewal2], for: key, claims: [:]) == .noMatchingPurchase)
        // Naming a renewal's transaction id does not make it an order's purchase.
        #expect(ReceiptMatcher.match(items, for: self.key(product: "monthly", transaction: "101"), claims: [:]) == .noMatchingPurchase)
    }

    @Test("verifyReceipt items: renewal when original_transaction_id differs; absent or equal is the initial purchase")
    func renewalFromAnswer() throws {
        func parse(_ json: String) throws -> AppleReceiptItem {
            let object = try #require(try JSONParser().parse(json).objectValue)
            return try #require(AppleReceiptItem(object: object))
        }
        #expect(try parse(#"{"product_id":"m","transaction_id":"7","original_transaction_id":"6"}"#).isRenewal)
        #expect(try !parse(#"{"product_id":"m","transaction_id":"7","original_transaction_id":"7"}"#).isRenewal)
        #expect(try !parse(#"{"product_id":"m","transaction_id":"7"}"#).isRenewal)
        #expect(try !parse(#"{"product_id":"m","transaction_id":7,"original_transaction_id":"7"}"#).isRenewal)
    }

    @Test("App Store Server API: an auto-renewable subscription's renewal never matches; other types are never renewals")
    func appStoreRenewals() {
        var transaction = AppStoreTransaction(transactionID: "201", originalTransactionID: "200", productID: "monthly")
        transaction.type = "Auto-Renewable Subscription"
        #expect(transaction.isRenewal && transaction.item.isRenewal)
        transaction.transactionID = "200"
        #expect(!transaction.isRenewal && !transaction.item.isRenewal)
        // A consumable's original id is its own in StoreKit 2; even when it is not, the type decides.
        var consumable = AppStoreTransaction(transactionID: "301", originalTransactionID: "300", productID: "gems")
        consumable.type = "Consumable"
        #expect(!consumable.item.isRenewal)
        #expect(ReceiptMatcher.match([consumable.item], for: key(product: "gems"), claims: [:]) == .matched(consumable.item))
    }

    @Test("the order's transaction id narrows the match")
    func transactionID() {
        let items = [item("1"), item("2", at: 100_000)]
        #expect(ReceiptMatcher.match(items, for: key(transaction: "2"), claims: [:]) == .matched(items[1]))
        #expect(ReceiptMatcher.match(items, for: key(transaction: "9"), claims: [:]) == .noMatchingPurchase)
    }

    @Test("account tokens compare as UUIDs, whatever their case")
    func uuids() {
        let lower = "2f7c8e3a-1111-4222-8333-944455556666"
        let items = [item("1", token: lower.uppercased()), item("2", token: "0f7c8e3a-1111-4222-8333-944455556666")]
        #expect(ReceiptMatcher.match(items, for: key(user: lower), claims: [:]) == .matched(items[0]))
        #expect(ReceiptMatcher.match(items, for: key(user: lower.uppercased()), claims: [:]) == .matched(items[0]))
        #expect(ReceiptMatcher.match([item("3")], for: key(user: lower), claims: [:]) == .noMatchingPurchase)
        // A username that is not a UUID cannot be compared, so it does not narrow the match.
        #expect(ReceiptMatcher.match([item("3")], for: key(user: "player-7"), claims: [:]) == .matched(item("3")))
    }

    @Test("the same transaction in in_app and latest_receipt_info counts once")
    func duplicatesAcrossLists() {
        #expect(ReceiptMatcher.candidates(in: [item("1"), item("1")], for: key()).count == 1)
    }
}

@Suite("Receipt matcher on Apple's real answer")
struct ReceiptMatcherFixtureTests {
    @Test("the sandbox success fixture matches each of its products to its own transaction")
    func fixture() throws {
        let answer = try AppleReceiptAnswer.parse(TestSupport.Fixtures.bytes("apple/verifyreceipt-0-success-sandbox-in_app.json"))
        let reference = Date(timeIntervalSince1970: 1_409_628_546)
        for (product, transaction) in [("com.sumiapp.GridDiary.pro", "1000000118990828"), ("com.sumiapp.griddiary.test", "1000000122102348")] {
            let key = ReceiptMatcher.OrderKey(orderID: "A1", productID: product, referenceTime: reference)
            guard case .matched(let item) = ReceiptMatcher.match(answer.items, for: key, claims: [:]) else {
                Issue.record("\(product) did not match")
                continue
            }
            #expect(item.transactionID == transaction)
        }
        let unknown = ReceiptMatcher.OrderKey(orderID: "A1", productID: "com.sumiapp.other", referenceTime: reference)
        #expect(ReceiptMatcher.match(answer.items, for: unknown, claims: [:]) == .noMatchingPurchase)
        let claimed = ReceiptMatcher.OrderKey(orderID: "A2", productID: "com.sumiapp.GridDiary.pro", referenceTime: reference)
        #expect(ReceiptMatcher.match(answer.items, for: claimed, claims: ["1000000118990828": "A1"])
            == .duplicateTransaction(transactionID: "1000000118990828", claimant: "A1"))
    }
}
