import Foundation
import Testing
@testable import ReconcileCore

@Suite("Google Play: what an answer means for an order")
struct PlayMatcherTests {
    static let order = PlayMatcher.OrderKey(orderID: "A1", productID: "gems", applicationUsername: "app-user", userID: "user-9")

    @Test("states: purchased, cancelled rejected, pending (and unknown) retried")
    func states() {
        #expect(PlayMatcher.judge(PlayPurchase(purchaseState: 0), for: Self.order, allowTestPurchases: false) == .purchased)
        #expect(PlayMatcher.judge(PlayPurchase(purchaseState: 1), for: Self.order, allowTestPurchases: false)
            == .reject(Reason(.cancelled, detail: "Google says the purchase was cancelled (purchaseState 1)")))
        if case .pending(let reason) = PlayMatcher.judge(PlayPurchase(purchaseState: 2), for: Self.order, allowTestPurchases: false) {
            #expect(reason.code == .paymentPending)
        } else {
            Issue.record("a pending payment is retried")
        }
        if case .pending = PlayMatcher.judge(PlayPurchase(purchaseState: 7), for: Self.order, allowTestPurchases: false) {} else {
            Issue.record("an unknown state is retried, never granted")
        }
    }

    @Test("test purchases only when allowed; the account must be the order's when both name one; the product must agree")
    func checks() {
        let test = PlayPurchase(purchaseState: 0, purchaseType: 0)
        #expect(PlayMatcher.judge(test, for: Self.order, allowTestPurchases: false).isReject(.sandboxNotAllowed))
        #expect(PlayMatcher.judge(test, for: Self.order, allowTestPurchases: true) == .purchased)
        let promo = PlayPurchase(purchaseState: 0, purchaseType: 1)
        #expect(PlayMatcher.judge(promo, for: Self.order, allowTestPurchases: false) == .purchased)
        for account in ["app-user", "user-9"] {
            #expect(PlayMatcher.judge(PlayPurchase(purchaseState: 0, obfuscatedExternalAccountID: account), for: Self.order, allowTestPurchases: false) == .purchased)
        }
        let other = PlayPurchase(purchaseState: 0, obfuscatedExternalAccountID: "someone")
        #expect(PlayMatcher.judge(other, for: Self.order, allowTestPurchases: false).isEscalate(.accountMismatch))
        // The order names no account: nothing to compare.
        #expect(PlayMatcher.judge(other, for: PlayMatcher.OrderKey(orderID: "A2", productID: "gems"), allowTestPurchases: false) == .purchased)
        #expect(PlayMatcher.judge(PlayPurchase(purchaseState: 0, productID: "coins"), for: Self.order, allowTestPurchases: false).isEscalate(.productMismatch))
        // A mismatch is escalated before a test purchase is refused: a person should see it.
        let both = PlayPurchase(purchaseState: 0, purchaseType: 0, obfuscatedExternalAccountID: "someone")
        #expect(PlayMatcher.judge(both, for: Self.order, allowTestPurchases: false).isEscalate(.accountMismatch))
    }

    @Test("claims are per store: google:<orderId>, or google-token:<digest> without one; another order's claim is a duplicate, the order's own is not")
    func claims() {
        #expect(PlayMatcher.claimKey(orderID: "GPA.1", tokenDigest: "ab") == "google:GPA.1")
        #expect(PlayMatcher.claimKey(orderID: nil, tokenDigest: "ab") == "google-token:ab")
        #expect(PlayMatcher.claimKey(orderID: "", tokenDigest: "ab") == "google-token:ab")
        #expect(PlayMatcher.match(claimKey: "google:GPA.1", orderID: "A1", claims: [:]) == .matched(claimKey: "google:GPA.1"))
        #expect(PlayMatcher.match(claimKey: "google:GPA.1", orderID: "A1", claims: ["google:GPA.1": "A1"]) == .matched(claimKey: "google:GPA.1"))
        #expect(PlayMatcher.match(claimKey: "google:GPA.1", orderID: "A1", claims: ["google:GPA.1": "B7"])
            == .duplicateTransaction(claimKey: "google:GPA.1", claimant: "B7"))
    }
}

extension PlayMatcher.Judgement {
    func isReject(_ code: ReasonCode) -> Bool {
        if case .reject(let reason) = self { return reason.code == code }
        return false
    }

    func isEscalate(_ code: ReasonCode) -> Bool {
        if case .escalate(let reason) = self { return reason.code == code }
        return false
    }
}
