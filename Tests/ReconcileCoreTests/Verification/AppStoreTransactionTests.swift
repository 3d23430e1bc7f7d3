import Foundation
import ReconcileCore
import Testing
import TestSupport

@Suite("App Store signed transactions and history pages")
struct AppStoreTransactionTests {
    @Test("Apple's decoded payload (fixture) gives the fields the matcher needs, revocation included")
    func payloadFixture() throws {
        let transaction = try AppStoreTransaction.parse(Fixtures.bytes("appstore/asapi-jws-transaction-decoded-payload.json"))
        #expect(transaction.transactionID == "23456")
        #expect(transaction.originalTransactionID == "12345")
        #expect(transaction.bundleID == "com.example")
        #expect(transaction.productID == "com.example.product")
        #expect(transaction.purchaseDateMilliseconds == 1_698_148_900_000)
        #expect(transaction.revocationDateMilliseconds == 1_698_148_950_000)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.environment == "LocalTesting")
        #expect(transaction.type == "Auto-Renewable Subscription")
        let item = transaction.item
        #expect(item.isCancelled)
        #expect(item.transactionID == "23456" && item.productID == "com.example.product")
    }

    @Test("fractional milliseconds (Xcode) are cut to whole ones; ids may be numbers")
    func xcodeDates() throws {
        let payload = #"{"transactionId":7,"productId":"gems","purchaseDate":1697679936049.7297,"quantity":3}"#
        let transaction = try AppStoreTransaction.parse(Array(payload.utf8))
        #expect(transaction.transactionID == "7")
        #expect(transaction.purchaseDateMilliseconds == 1_697_679_936_049)
        #expect(transaction.quantity == 3)
        #expect(transaction.revocationDateMilliseconds == nil)
    }

    @Test("a payload without transactionId or productId, or not an object, is refused by name",
          arguments: [#"{"productId":"gems"}"#, #"{"transactionId":"1"}"#, #"[1]"#, "not json", #"{"transactionId":"1","transactionId":"2","productId":"g"}"#])
    func refused(_ payload: String) {
        #expect(throws: AppStoreTransaction.Unparseable.self) { try AppStoreTransaction.parse(Array(payload.utf8)) }
    }

    @Test("a history page (fixture) and its paging fields")
    func historyFixture() throws {
        let page = try AppStoreDocument.historyPage(Fixtures.bytes("appstore/asapi-get-transaction-history-response.json"))
        #expect(page.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
        #expect(page.revision == "revision_output")
        #expect(page.hasMore)
        #expect(page.bundleID == "com.example")
        #expect(page.appAppleID == "323232")
    }

    @Test("a history page that says hasMore without a revision would loop: refused")
    func historyWithoutRevision() {
        #expect(throws: AppStoreTransaction.Unparseable.self) {
            try AppStoreDocument.historyPage(Array(#"{"hasMore":true,"signedTransactions":[]}"#.utf8))
        }
        #expect(throws: AppStoreTransaction.Unparseable.self) {
            try AppStoreDocument.historyPage(Array(#"{"hasMore":"yes","revision":"r","signedTransactions":[]}"#.utf8))
        }
    }

    @Test("transaction info: the signed transaction, or a named error")
    func transactionInfo() throws {
        #expect(try AppStoreDocument.signedTransactionInfo(Array(#"{"signedTransactionInfo":"a.b.c"}"#.utf8)) == "a.b.c")
        #expect(throws: AppStoreTransaction.Unparseable.self) { try AppStoreDocument.signedTransactionInfo(Array("{}".utf8)) }
    }
}
