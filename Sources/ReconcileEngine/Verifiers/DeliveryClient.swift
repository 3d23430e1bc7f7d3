import Foundation
import ReconcileCore

/// Delivers verified grants to the merchant's backend (`[Delivery] URL=`, DESIGN §5): Apple's
/// product, quantity and transaction, never the client's amount. 2xx or 409 (already
/// delivered) finish the order.
public struct DeliveryClient: OrderVerifier {
    public var endpoint: EndpointSettings
    public var transport: any HTTPTransport

    public init(endpoint: EndpointSettings, transport: any HTTPTransport) {
        self.endpoint = endpoint
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .delivery }

    static func body(_ order: ClaimedOrder) -> [UInt8] {
        let grant = order.grant ?? Grant()
        return JSONWriter.bytes(.object(JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(grant.productID ?? order.productID),
            "transaction_id": .string(orNull: grant.transactionID), "original_transaction_id": .string(orNull: grant.originalTransactionID),
            "quantity": .integer(grant.quantity ?? 1), "purchase_date_ms": grant.purchaseDateMilliseconds.map(JSONValue.integer) ?? .null,
            "environment": .string(orNull: grant.environment), "user_id": .string(orNull: order.userID),
            "application_username": .string(orNull: order.applicationUsername),
        ])))
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        let started = Date()
        let result = await transport.send(endpoint.orderRequest(order, body: Self.body(order)))
        let (verdict, observation) = MerchantAnswerClassifier.classifyDelivery(result, now: Date())
        var retryAfter: Duration?
        if case .transient(_, let after) = verdict { retryAfter = after }
        await gate.report(.delivery, observation, retryAfter: retryAfter, rateLimited: result.response?.status == 429)
        var record = AttemptRecord(endpoint: .delivery, httpStatus: result.response?.status, latency: result.latency, outcome: "answered", startedAt: started)
        let outcome: VerifierOutcome.Verdict
        switch verdict {
        case .delivered:
            outcome = .delivered
        case .transient(let reason, let after):
            record.outcome = "transient"
            record.detail = reason
            outcome = .transient(reason: reason, retryAfter: after)
        case .escalate(let reason):
            record.detail = reason
            outcome = .escalate(reason: "delivery_refused", detail: reason)
        case .configuration(let reason):
            record.outcome = "configuration"
            record.detail = reason
            outcome = .configuration(reason: reason)
        }
        return VerifierOutcome(records: [record], verdict: outcome)
    }
}
