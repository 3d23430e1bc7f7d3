import Foundation
import ReconcileFoundation
import Testing
@testable import ReconcileCore

@Suite("Play discovery (a reported one-time purchase, as Google confirms it)")
struct PlayDiscoveryTests {
    static let digest = String(repeating: "cd", count: 32)

    func confirm(_ purchase: PlayPurchase, allowTest: Bool = false) -> PlayDiscovery.Confirmation {
        PlayDiscovery.confirm(
            purchase, token: "token-1", tokenDigest: Self.digest, package: "com.example.app", productID: "gems_100", allowTestPurchases: allowTest,
            via: .pubsub)
    }

    @Test("paid: kept under google:<orderId>, with the account, the profile, the time and the token as its proof")
    func paid() throws {
        var purchase = PlayPurchase(
            purchaseState: 0, orderID: "GPA.3312-0001", purchaseTimeMilliseconds: 1_800_000_000_123, obfuscatedExternalAccountID: "acct-9")
        purchase.obfuscatedExternalProfileID = "profile-2"
        guard case .purchase(let kept) = confirm(purchase) else { Issue.record("not kept"); return }
        #expect(kept.store == .googlePlay && kept.transactionKey == "google:GPA.3312-0001" && kept.productID == "gems_100")
        #expect(kept.accountToken == "acct-9" && kept.profileID == "profile-2" && kept.environment == "Production" && kept.via == .pubsub)
        #expect(kept.purchasedAt == Date(epochMilliseconds: 1_800_000_000_123))
        #expect(kept.proof == OrderProof(purchaseToken: "token-1", packageName: "com.example.app"))
        #expect(kept.orderID == "google:GPA.3312-0001" && !kept.isSubscription)
        // Google's own product id wins over the notification's; no order id: the token's digest.
        var promo = PlayPurchase(purchaseState: 0, productID: "gems_500")
        promo.orderID = nil
        guard case .purchase(let promoKept) = confirm(promo) else { Issue.record("not kept"); return }
        #expect(promoKept.transactionKey == "google-token:\(Self.digest)" && promoKept.productID == "gems_500")
    }

    @Test("cancelled and test purchases are not kept; pending and unknown states are read again later")
    func notKept() {
        #expect(confirm(PlayPurchase(purchaseState: 1, orderID: "GPA.1")) == .notKept(Reason(.cancelled, detail: "Google says the purchase was cancelled (purchaseState 1)")))
        guard case .pending(let pending) = confirm(PlayPurchase(purchaseState: 2, orderID: "GPA.1")), pending.code == .paymentPending else {
            Issue.record("pending kept")
            return
        }
        guard case .pending(let unknown) = confirm(PlayPurchase(purchaseState: 7, orderID: "GPA.1")), unknown.code == .playUnknownPurchaseState else {
            Issue.record("unknown state kept")
            return
        }
        let test = PlayPurchase(purchaseState: 0, purchaseType: 0, orderID: "GPA.1")
        guard case .notKept(let refused) = confirm(test), refused.code == .sandboxNotAllowed else {
            Issue.record("a test purchase kept")
            return
        }
        guard case .purchase(let allowed) = confirm(test, allowTest: true) else {
            Issue.record("an allowed test purchase not kept")
            return
        }
        #expect(allowed.environment == "Test")
    }
}
