import Foundation
import ReconcileCore
import ReconcileCrypto

/// `orders.get` (`GET /androidpublisher/v3/applications/{package}/orders/{orderId}`; DESIGN
/// §5b): a customer's Google Play order, for `reconcilectl lookup` and `recover`. The order's
/// token is then confirmed with `purchases.products.get` for each one-time product in it; a
/// subscription's line item is shown, never confirmed or recovered.
extension GooglePlayVerifier {
    /// The purchases of Play order `orderID` of `package`, taking a rate token from `gate` for
    /// each request.
    public func lookUpOrder(_ orderID: String, package: String, gate: any EndpointGate) async -> Result<[LookedUpPurchase], SupportLookup.Failure> {
        guard packageNames.contains(package) else {
            return .failure(.configuration(ConfiguredVerifiers.foreignPackageDetail(package, configured: packageNames)))
        }
        guard await gate.acquire(.googlePlay) else {
            return .failure(.unavailable("Google Play's endpoint is not taking requests now (its circuit is open or Google asked to wait); see reconcilectl status"))
        }
        var exchanges = Exchanges()
        exchanges.sent = 1  // the token above was this request's
        let path = "/androidpublisher/v3/applications/\(AppStoreVerifier.pathComponent(package))/orders/\(AppStoreVerifier.pathComponent(orderID))"
        let order: PlayOrder
        switch await exchange(method: "GET", path: path, body: [], exchanges: &exchanges, gate: gate, judge: Self.judgeOrder) {
        case .answer(.order(let answer)):
            order = answer
        case .answer(.notFound):
            return .failure(.notFound("Google knows no order \(orderID) of \(package)"))
        case .verdict(let verdict):
            return .failure(SupportLookup.Failure(verdict, store: "Google"))
        }
        guard order.orderID == orderID || order.orderID.hasPrefix(orderID + "..") else {
            return .failure(.untrusted("Google answered with another order (\(order.orderID)) than the one asked for"))
        }
        let digest = SHA256.hexDigest(Array(order.purchaseToken.utf8))
        var purchases: [LookedUpPurchase] = []
        for item in order.lineItems {
            if item.isSubscription {
                purchases.append(.playSubscription(order, item: item, package: package))
                continue
            }
            switch await lookUpOneTime(package: package, product: item.productID, token: order.purchaseToken, gate: gate) {
            case .purchase(let purchase):
                purchases.append(.googlePlay(order, item: item, purchase: purchase, package: package, tokenDigest: digest))
            case .unconfirmed(let reason):
                return .failure(.untrusted("Google does not confirm the order's purchase of \(item.productID) (\(reason)): nothing in it is believed"))
            case .unavailable(let reason):
                return .failure(.unavailable("Google did not confirm the order's purchase of \(item.productID): \(reason)"))
            }
        }
        return .success(purchases)
    }

    /// What `orders.get` answered.
    enum OrderAnswer {
        case order(PlayOrder)
        case notFound
    }

    static func judgeOrder(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<OrderAnswer> {
        guard let response = result.response else {
            return .of(HTTPAnswerClassifier.classify(result, now: now)) { _ in .init(.verdict(.transient(Reason(.unexpected)))) }
        }
        if response.status == 404 { return .init(.answer(.notFound), detail: "orders.get 404") }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        let verdict = PlayAnswerClassifier.classify(status: response.status, body: response.body, retryAfter: retryAfter)
        switch verdict {
        case .answer:
            return readBody(response) { body in
                let order = try PlayOrder.parse(body)
                return .init(.answer(.order(order)), detail: "order \(order.orderID) \(order.state)")
            }
        case .tokenNotFound, .tokenExpired:
            return .init(.answer(.notFound), detail: "orders.get \(response.status)")
        case .unauthorized, .configuration, .transient, .escalate:
            return refusal(verdict)!
        }
    }
}
