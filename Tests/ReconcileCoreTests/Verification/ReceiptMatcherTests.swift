import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

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
