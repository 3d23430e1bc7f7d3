import Foundation
import ReconcileCore

/// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`; DESIGN §5b): the purchases of a
/// customer's App Store order, for `reconcilectl lookup` and `recover`. Production only, as
/// Apple serves it. Every signed transaction in the answer is verified as any other (chain,
/// bundle, environment); one that fails makes the whole answer untrusted.
extension AppStoreVerifier {
    /// The purchases of App Store order `orderID`, taking a rate token for production from
    /// `gate` first (no attempt took one for it).
    public func lookUpOrder(_ orderID: String, gate: any EndpointGate) async -> Result<[LookedUpPurchase], SupportLookup.Failure> {
        guard await gate.acquire(.production) else {
            return .failure(.unavailable("the App Store's production endpoint is not taking requests now (its circuit is open or Apple asked to wait); see reconcilectl status"))
        }
        var exchanges = Exchanges()
        exchanges.sent = 1  // the token above was this request's
        let step = await get("/inApps/v1/lookup/\(Self.pathComponent(orderID))", on: .production, exchanges: &exchanges, gate: gate)
        let body: [UInt8]
        switch step {
        case .notFound:
            return .failure(.notFound("Apple knows no order \(orderID)"))
        case .verdict(let verdict):
            return .failure(SupportLookup.Failure(verdict, store: "Apple"))
        case .answer(let answer):
            body = answer
        }
        let signed: [String]
        do {
            signed = try AppStoreDocument.orderLookup(body)
        } catch {
            return .failure(.unavailable("Apple's answer is not an order look-up: \(error.description)"))
        }
        var purchases: [LookedUpPurchase] = []
        for jws in signed {
            switch verifyReturned(jws, environment: .production, now: gate.now()) {
            case .success(let transaction):
                purchases.append(.appStore(transaction, signedTransaction: jws))
            case .failure(let failure):
                return .failure(.untrusted("a signed transaction in Apple's answer failed verification (\(failure.verdict.failureReason)): nothing in it is believed"))
            }
        }
        // Apple's `status` is not believed alone: no verified transaction means no such order.
        guard !purchases.isEmpty else { return .failure(.notFound("Apple knows no order \(orderID) (no signed transaction in its answer)")) }
        return .success(purchases)
    }
}
