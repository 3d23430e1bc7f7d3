import Foundation
import Glibc
import ReconcileCore
import ReconcileHTTP
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Subscriptions (DESIGN §5): an order is the initial purchase only. A renewal — a transaction
/// whose id differs from its original transaction's — is never granted as an order of its own.
/// (Issue 12, item 3: three orders against one subscription receipt all finished, with the
/// original and two renewal transactions.)
@Suite("End to end: subscription renewals", .serialized)
struct RenewalEndToEndTests {
    @Test("Kind=apple: three orders against one subscription receipt — one finished with the original, no renewal granted")
    func appleRenewals() async throws {
        let harness = Harness("renewals")
        try await harness.startMock(["--shared-secret", "s3cret"])
        harness.configure(VerificationEndToEndTests().appleConfiguration(harness, allowSandbox: false))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let receipt = MockReceipt(items: [
            .init(productID: "monthly", transactionID: "100", originalTransactionID: "100", purchaseDateMilliseconds: now - 60 * 86_400_000),
            .init(productID: "monthly", transactionID: "101", originalTransactionID: "100", purchaseDateMilliseconds: now - 30 * 86_400_000),
            .init(productID: "monthly", transactionID: "102", originalTransactionID: "100", purchaseDateMilliseconds: now),
        ])
        harness.dropOrder("SUB-1", receipt: receipt, product: "monthly")
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        harness.dropOrder("SUB-2", receipt: receipt, product: "monthly")
        harness.dropOrder("SUB-3", receipt: receipt, product: "monthly")
        #expect(await harness.waitFor(.escalated, count: 2), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        #expect(try store.order(id: "SUB-1")?.verifiedTransactionID == "100")
        for id in ["SUB-2", "SUB-3"] {
            let order = try #require(try store.order(id: id))
            #expect(order.state == .escalated && order.reason == "duplicate_transaction", "\(id): \(order.state) \(order.reason ?? "")")
        }
        #expect(try harness.scalar("SELECT count(*) FROM claims") == 1)
        #expect(try harness.scalar("SELECT count(*) FROM claims WHERE transaction_id IN ('101', '102')") == 0)
    }

    @Test("Kind=appstore: an order naming a renewal's transaction id is not granted; the original's order is")
    func appStoreRenewals() async throws {
        let harness = Harness("appstore-renewals")
        _ = try await AppStoreEndToEndTests.setUp(harness)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func transaction(_ id: String, purchased: Int64) -> String {
            #"{"transactionId":"\#(id)","originalTransactionId":"300","productId":"monthly","purchaseDate":\#(purchased),"type":"Auto-Renewable Subscription"}"#
        }
        let body = #"{"environment":"Production","transactions":[\#(transaction("300", purchased: now - 86_400_000)),\#(transaction("301", purchased: now))]}"#
        let answer = await harness.transport.send(
            HTTPRequest(url: harness.base + "/_mock/appstore/transactions", body: Array(body.utf8), timeout: .seconds(5)))
        #expect(answer.response?.status == 200)
        harness.configure(AppStoreEndToEndTests.configuration(harness))
        harness.drop("renewal.json", OrderFixtures.orderJSON("RENEWAL", product: "monthly", receipt: nil, transactionID: "301"))
        harness.drop("original.json", OrderFixtures.orderJSON("ORIGINAL", product: "monthly", receipt: nil, transactionID: "300"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        #expect(await harness.waitFor(.escalated, count: 1), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        #expect(try store.order(id: "ORIGINAL")?.verifiedTransactionID == "300")
        let renewal = try #require(try store.order(id: "RENEWAL"))
        #expect(renewal.state == .escalated && renewal.reason == "no_matching_purchase", "\(renewal.state) \(renewal.reason ?? "")")
        #expect(try harness.scalar("SELECT count(*) FROM claims WHERE transaction_id = '301'") == 0)
    }
}
