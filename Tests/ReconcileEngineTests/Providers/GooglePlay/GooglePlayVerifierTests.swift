import Foundation
import Testing
@testable import ReconcileEngine

@Suite("Google Play: the verifier's requests")
struct GooglePlayVerifierTests {
    @Test("purchases.products.get's path: package, product and token each one segment, everything but unreserved ASCII escaped")
    func purchasePath() {
        #expect(GooglePlayVerifier.purchasePath(package: "com.example.game", product: "gems_100", token: "abc.DEF-ghi_~9")
            == "/androidpublisher/v3/applications/com.example.game/purchases/products/gems_100/tokens/abc.DEF-ghi_~9")
        #expect(GooglePlayVerifier.purchasePath(package: "com.example.game", product: "a/b c", token: "x/../y?z=1#%é")
            == "/androidpublisher/v3/applications/com.example.game/purchases/products/a%2Fb%20c/tokens/x%2F..%2Fy%3Fz%3D1%23%25%C3%A9")
    }
}
