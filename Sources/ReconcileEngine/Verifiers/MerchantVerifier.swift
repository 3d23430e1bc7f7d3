import Foundation
import ReconcileCore

/// `Kind=http`: the merchant's own endpoint, which verifies and grants in one step (DESIGN §5).
/// Every request carries `Idempotency-Key: <order_id>`, so the merchant deduplicates however
/// often the daemon has to ask.
public struct MerchantVerifier: OrderVerifier {
    public var endpoint: EndpointSettings
    public var transport: any HTTPTransport

    public init(endpoint: EndpointSettings, transport: any HTTPTransport) {
        self.endpoint = endpoint
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .merchant }

    /// The request body: the order as the merchant's clients send it today.
    static func body(_ order: ClaimedOrder) -> [UInt8] {
        JSONWriter.bytes(.object(JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(order.productID),
            "receipt": .string(orNull: order.proof.receipt), "transaction_id": .string(orNull: order.proof.transactionID),
            "application_username": .string(orNull: order.applicationUsername), "user_id": .string(orNull: order.userID),
            "amount": .string(orNull: order.amount), "currency": .string(orNull: order.currency),
            "created_at": .string(orNull: order.createdAt.map(RFC3339.format)),
        ])))
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        let started = Date()
        let result = await transport.send(endpoint.orderRequest(order, body: Self.body(order)))
        let (verdict, observation) = MerchantAnswerClassifier.classify(result, now: Date())
        var retryAfter: Duration?
        if case .transient(_, let after) = verdict { retryAfter = after }
        await gate.report(.merchant, observation, retryAfter: retryAfter, rateLimited: result.response?.status == 429)
        var record = AttemptRecord(endpoint: .merchant, httpStatus: result.response?.status, latency: result.latency, outcome: "answered", startedAt: started)
        let outcome: VerifierOutcome.Verdict
        switch verdict {
        case .verified(let transactionID):
            outcome = .granted(Grant(transactionID: transactionID, productID: order.productID), finishedBy: "merchant")
        case .rejected(let reason):
            outcome = .reject(reason: "merchant_rejected", detail: reason)
        case .transient(let reason, let after):
            record.outcome = "transient"
            record.detail = reason
            outcome = .transient(reason: reason, retryAfter: after)
        case .escalate(let reason):
            record.detail = reason
            outcome = .escalate(reason: "merchant_refused", detail: reason)
        case .configuration(let reason):
            record.outcome = "configuration"
            record.detail = reason
            outcome = .configuration(reason: reason)
        }
        return VerifierOutcome(records: [record], verdict: outcome)
    }
}
