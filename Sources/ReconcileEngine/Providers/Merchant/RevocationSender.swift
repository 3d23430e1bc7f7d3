import Foundation
import ReconcileCore
import ReconcileFoundation

/// Tells the merchant's `[Revocation] URL=` about a refund, a revocation or its reversal
/// (DESIGN §5a): sends the outbox's `revocation_notice` actions.
///
/// The action's payload is the request body, posted byte for byte as the rule that recorded the
/// event wrote it (`{event, order_id, product_id, transaction_id, store, quantity, reason,
/// revoked_at, environment, user_id, application_username, sequence, event_time}`), with
/// `Idempotency-Key:` the action's key (`<order_id>:<event>:<notification id>`, fixed when the
/// event was recorded, so every retry of one event carries the same key and the merchant can drop
/// repeats). Answers are read as
/// deliveries are: 2xx or 409 → done; 401/403/404 → configuration error; 408, 429, 5xx and
/// transport failures → sent again after the backoff; any other 4xx → escalated.
public struct RevocationSender: OutboxSender {
    /// `[Revocation] URL=`, `Timeout=`, `CAFile=` and the bearer token (never logged).
    public var target: EndpointSettings
    public var transport: any HTTPTransport

    public init(endpoint: EndpointSettings, transport: any HTTPTransport) {
        self.target = endpoint
        self.transport = transport
    }

    public var endpoint: VerificationEndpoint { .revocation }

    public func send(_ claimed: ClaimedAction, gate: any EndpointGate) async -> OutboxOutcome {
        let action = claimed.action
        guard action.kind == .revocationNotice else {
            return OutboxOutcome(records: [], verdict: .escalate(Reason(.unknownAction, detail: "\(action.kind.rawValue) is not a revocation notice")))
        }
        let body = Array(action.payload.utf8)
        // The body is the rule's, as written; one that is not a JSON object would only be
        // refused by the merchant after every retry: a person looks at it now.
        guard case .object? = try? JSONParser().parse(body) else {
            return OutboxOutcome(
                records: [], verdict: .escalate(Reason(.revocationPayloadInvalid, detail: "the recorded notice is not a JSON object; nothing was sent")))
        }
        let request = target.request(headers: target.headers([HTTPHeader("Idempotency-Key", action.idempotencyKey)]), body: body)
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(request, to: .revocation, judge: Self.judge)
        guard case .answer(let verdict) = meaning else { preconditionFailure("the revocation protocol judges every answer itself") }
        return OutboxOutcome(records: [record], verdict: verdict)
    }

    /// What a revocation endpoint's answer means for the notice and the endpoint: the
    /// delivery's classes (``MerchantAnswerClassifier/classifyDelivery(_:now:endpoint:)``).
    static func judge(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<OutboxOutcome.Verdict> {
        let (verdict, observation) = MerchantAnswerClassifier.classifyDelivery(result, now: now, endpoint: .revocation)
        switch verdict {
        case .delivered:
            let status = result.response.map { "HTTP \($0.status)" } ?? "answered"
            return .init(.answer(.done(Reason(.notified, detail: "the merchant took the notice (\(status))"))), observation: observation)
        case .transient(let reason, let after):
            return .init(
                .answer(.transient(reason, retryAfter: after)), observation: observation, retryAfter: after,
                rateLimited: result.response?.status == 429, detail: reason.description)
        case .escalate(let reason):
            return .init(.answer(.escalate(Reason(.revocationRefused, detail: reason.description))), observation: observation, detail: reason.description)
        case .configuration(let reason):
            return .init(.answer(.configuration(reason)), observation: observation, detail: reason.description)
        }
    }
}
