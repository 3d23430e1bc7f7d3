import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation

/// Answers Apple's `CONSUMPTION_REQUEST` (DESIGN §5a): sends the outbox's `consumption_answer`
/// actions of one App Store Server API environment with Send Consumption Information v2,
/// `PUT /inApps/v2/transactions/consumption/{transactionId}`, signed with `Kind=appstore`'s key
/// (the bearer token is never logged). The body is the `request` the rule wrote, as written.
///
/// Answers: 200/202 → done; 429, 5xx, Apple's retryable codes and transport failures → sent again
/// after the backoff; 400 and 404 → escalated, the error code as the reason (Apple refuses this
/// answer for good); 401/403 → a configuration error, as for every App Store Server API call.
/// Once Apple's 12-hour deadline has passed the answer is not sent: the action is escalated
/// `consumption_deadline_passed`.
public struct ConsumptionSender: OutboxSender {
    /// `.production` or `.sandbox`: the environment whose actions it sends.
    public let endpoint: VerificationEndpoint
    /// The API's base URL (`https://api.storekit.apple.com`, or the mock's), time-out, anchors.
    public var api: EndpointSettings
    /// Signs the bearer tokens. Never logged.
    public var tokens: AppStoreTokenCache
    public var transport: any HTTPTransport

    public init(endpoint: VerificationEndpoint, api: EndpointSettings, tokens: AppStoreTokenCache, transport: any HTTPTransport) {
        self.endpoint = endpoint
        self.api = api
        self.tokens = tokens
        self.transport = transport
    }

    public func send(_ claimed: ClaimedAction, gate: any EndpointGate) async -> OutboxOutcome {
        let action = claimed.action
        guard action.kind == .consumptionAnswer else {
            return OutboxOutcome(records: [], verdict: .escalate(Reason(.unknownAction, detail: "\(action.kind.rawValue) is not a consumption answer")))
        }
        if ConsumptionRules.isPastDeadline(action, now: gate.now()) {
            let deadline = action.deadline.map(RFC3339.format) ?? "?"
            return OutboxOutcome(
                records: [],
                verdict: .escalate(Reason(.consumptionDeadlinePassed, detail: "Apple's 12-hour deadline passed at \(deadline); the answer is not sent any more")))
        }
        guard case .object(let payload)? = try? JSONParser().parse(Array(action.payload.utf8)),
            let transactionID = payload["transaction_id"]?.stringValue, !transactionID.isEmpty, case .object(let body)? = payload["request"]
        else {
            return OutboxOutcome(
                records: [], verdict: .escalate(Reason(.consumptionPayloadInvalid, detail: "the recorded answer is not what the rule writes; nothing was sent")))
        }
        let token: String
        do {
            token = try tokens.token(now: gate.now())
        } catch {
            await gate.report(endpoint, .configuration(reason: Reason(.appStoreKey)), retryAfter: nil, rateLimited: false)
            return OutboxOutcome(records: [], verdict: .configuration(Reason(.appStoreKey, detail: "cannot sign the token (\(error))")))
        }
        var settings = api
        settings.bearerToken = token
        let url = AppStoreVerifier.join(api.url, "/inApps/v2/transactions/consumption/\(AppStoreVerifier.pathComponent(transactionID))")
        let request = settings.request(method: "PUT", url: url, headers: settings.headers([]), body: JSONWriter.bytes(.object(body)))
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(request, to: endpoint, environment: endpoint == .sandbox ? "Sandbox" : "Production", judge: Self.judge)
        guard case .answer(let verdict) = meaning else { preconditionFailure("the consumption protocol judges every answer itself") }
        return OutboxOutcome(records: [record], verdict: verdict)
    }

    /// What Send Consumption Information's answer means for the action and the endpoint.
    static func judge(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<OutboxOutcome.Verdict> {
        let response: HTTPResponse
        switch HTTPAnswerClassifier.classify(result, handled: Set(100...599), now: now) {
        case .endpointFailure(let reason, let retryAfter, let rateLimited):
            return .init(
                .answer(.transient(reason, retryAfter: retryAfter)), observation: .failure(reason: reason), retryAfter: retryAfter,
                rateLimited: rateLimited, detail: reason.description)
        case .configuration(let reason):
            return .init(.answer(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
        case .answer(let answer):
            response = answer
        }
        let status = response.status
        let code = AppStoreAnswerClassifier.errorCode(in: response.body)
        if status == 200 || status == 202 {
            return .init(.answer(.done(Reason(.answered, detail: "Apple took the consumption information (HTTP \(status))"))), verifierStatus: code)
        }
        if status == 400 || status == 404, !(code.map(AppStoreAnswerClassifier.retryableCodes.contains) ?? false) {
            let refused: ReasonCode = code.map(ReasonCode.appStore) ?? .appStoreHTTP(status)
            return .init(
                .answer(.escalate(Reason(refused, detail: "Apple refused the consumption answer (HTTP \(status)); it is not sent again"))),
                detail: refused.rawValue, verifierStatus: code)
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        switch AppStoreAnswerClassifier.classify(status: status, body: response.body, retryAfter: retryAfter) {
        case .configuration(let reason):
            return .init(.answer(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description, verifierStatus: code)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .answer(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description, verifierStatus: code)
        case .internalError:
            return .init(
                .answer(.transient(Reason(.appStore(5000000)))), observation: .failure(reason: Reason(.appStore(5000000))),
                detail: ReasonCode.appStore(5000000).rawValue,
                verifierStatus: code)
        case .answer, .transactionNotFound, .reject:
            // Not reached for this endpoint's statuses (2xx, 400 and 404 are read above); a
            // surprise is retried, not taken as an answer.
            let reason = Reason(.appStoreHTTP(status, errorCode: code))
            return .init(.answer(.transient(reason)), observation: .failure(reason: reason), detail: reason.description, verifierStatus: code)
        }
    }
}
