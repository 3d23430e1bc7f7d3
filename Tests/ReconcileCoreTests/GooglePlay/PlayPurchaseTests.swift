import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

@Suite("Google Play: ProductPurchase")
struct PlayPurchaseTests {
    @Test("the constructed ProductPurchase: int64 fields as strings, int32 as numbers, a test purchase of two")
    func fixture() throws {
        let purchase = try PlayPurchase.parse(Fixtures.bytes("google-play/product-purchase-v1.constructed.json"))
        #expect(purchase == PlayPurchase(
            purchaseState: 0, consumptionState: 0, acknowledgementState: 0, purchaseType: 0, orderID: "GPA.0000-0000-0000-00000", quantity: 2,
            purchaseTimeMilliseconds: 1_735_689_600_000, obfuscatedExternalAccountID: "ACCOUNT_HASH", productID: "coins_100", regionCode: "US"))
        #expect(purchase.isTest && !purchase.isAcknowledged && !purchase.isConsumed)
        #expect(purchase.summary == "orderId GPA.0000-0000-0000-00000, purchaseState 0 (purchased), acknowledgementState 0, consumptionState 0, purchaseType 0 (test)")
    }

    @Test("lenient where Google is: numbers as strings and strings as numbers; absent quantity is 1; a consumed purchase counts as acknowledged")
    func lenient() throws {
        let purchase = try PlayPurchase.parse(Array(#"{"purchaseState":"0","purchaseTimeMillis":1700000000000,"consumptionState":1}"#.utf8))
        #expect(purchase.purchaseState == 0 && purchase.purchaseTimeMilliseconds == 1_700_000_000_000 && purchase.quantity == 1)
        #expect(purchase.isAcknowledged && purchase.isConsumed && purchase.orderID == nil && !purchase.isTest)
        // The profile within the account, when the app passed one (DESIGN §5b: the order's user_id).
        let profiled = try PlayPurchase.parse(Array(#"{"purchaseState":0,"obfuscatedExternalAccountId":"a","obfuscatedExternalProfileId":"p"}"#.utf8))
        #expect(profiled.obfuscatedExternalAccountID == "a" && profiled.obfuscatedExternalProfileID == "p" && purchase.obfuscatedExternalProfileID == nil)
    }

    @Test("strict where the verdict rests: no purchaseState, a fraction, a decisive key twice, a wrong type, a quantity of 0 are unparseable", arguments: [
        #"{}"#, #"{"purchaseState":0.5}"#, #"{"purchaseState":0,"purchaseState":1}"#, #"{"purchaseState":0,"orderId":"a","orderId":"b"}"#,
        #"{"purchaseState":0,"orderId":7}"#, #"{"purchaseState":0,"quantity":0}"#, #"{"purchaseState":99999999999}"#, "[]", "not json",
        #"{"purchaseState":0,"purchaseTimeMillis":"soon"}"#, #"{"purchaseState":0,"obfuscatedExternalProfileId":"a","obfuscatedExternalProfileId":"b"}"#,
    ])
    func unparseable(_ body: String) {
        #expect(throws: PlayPurchase.Unparseable.self) { try PlayPurchase.parse(Array(body.utf8)) }
    }
}
