import Foundation
import ReconcileCore
import ReconcileFoundation

/// `Kind=http`: the merchant's own endpoint, which verifies and grants in one step (DESIGN §5).
/// Every request carries `Idempotency-Key: <order_id>`, so the merchant deduplicates however
/// often the daemon has to ask.
public struct MerchantVerifier: OrderVerifier {
    /// The merchant's endpoint verifies whatever it is sent: Google Play orders too, when no
    /// `[GooglePlay]` section takes them.
    public var work: Set<WorkKind> { [.verify, .verifyPlay] }
    public var endpoint: EndpointSettings
    public var transport: any HTTPTransport

    public init(endpoint: EndpointSettings, transport: any HTTPTransport) {
        self.endpoint = endpoint
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .merchant }

    /// The request body: the order as the merchant's clients send it today (DESIGN §5: absent
    /// proofs omitted, so that a merchant reading only `receipt` sees what it always saw).
    static func body(_ order: ClaimedOrder) -> [UInt8] {
        var object = JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(order.productID),
            "receipt": .string(orNull: order.proof.receipt), "transaction_id": .string(orNull: order.proof.transactionID),
            "application_username": .string(orNull: order.applicationUsername), "user_id": .string(orNull: order.userID),
            "amount": .string(orNull: order.amount), "currency": .string(orNull: order.currency),
            "created_at": .string(orNull: order.createdAt.map(RFC3339.format)),
        ])
        if let signed = order.proof.signedTransaction { object["signed_transaction"] = .string(signed) }
        if let token = order.proof.purchaseToken { object["purchase_token"] = .string(token) }
        if let package = order.proof.packageName { object["package_name"] = .string(package) }
        return JSONWriter.bytes(.object(object))
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(endpoint.orderRequest(order, body: Self.body(order)), to: .merchant) { result, now in
            Self.judge(result, order: order, now: now)
        }
        guard case .verdict(let verdict) = meaning else { preconditionFailure("the merchant protocol has no further answer to read") }
        return VerifierOutcome(records: [record], verdict: verdict)
    }

    /// What a merchant answer means for the order and its endpoint.
    static func judge(_ result: HTTPExchangeResult, order: ClaimedOrder, now: Date) -> EndpointExchange.Judgement<Never> {
        let (verdict, observation) = MerchantAnswerClassifier.classify(result, now: now)
        let rateLimited = result.response?.status == 429
        switch verdict {
        case .verified(let transactionID):
            let grant = Grant(transactionID: transactionID, productID: order.productID)
            return .init(.verdict(.granted(grant, finishedBy: .merchant)), observation: observation)
        case .rejected(let reason):
            return .init(.verdict(.reject(Reason(.merchantRejected, detail: reason))), observation: observation)
        case .transient(let reason, let after):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: observation, retryAfter: after,
                rateLimited: rateLimited, detail: reason.description)
        case .escalate(let reason):
            return .init(.verdict(.escalate(Reason(.merchantRefused, detail: reason.description))), observation: observation, detail: reason.description)
        case .configuration(let reason):
            return .init(.verdict(.configuration(reason)), observation: observation, detail: reason.description)
        }
    }
}
