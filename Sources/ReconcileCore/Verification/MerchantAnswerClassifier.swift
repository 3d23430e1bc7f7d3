import Foundation
import ReconcileFoundation

/// The merchant protocol's answers (DESIGN §5, `Kind=http`), and the delivery endpoint's.
///
/// A paid order is never rejected on a protocol error: only an explicit
/// `{"result":"rejected"}` rejects; every other surprise is transient or escalates to a person.
public enum MerchantAnswerClassifier {
    /// What an answer means for the order.
    public enum Verdict: Sendable, Hashable {
        /// Verified and granted by the merchant; its transaction id if it gave one.
        case verified(transactionID: String?)
        /// `{"result":"rejected"}`, with the merchant's own words (free text, not a code).
        case rejected(reason: String)
        case transient(reason: Reason, retryAfter: Duration?)
        case escalate(reason: Reason)
        case configuration(reason: Reason)
    }

    /// The 4xx statuses the merchant and delivery protocols read themselves; 401, 403 and 404
    /// are configuration errors, 408 and 429 endpoint failures.
    static let answeredClientErrors = Set(400...499).subtracting([401, 403, 404, 408, 429])

    /// Classifies a merchant verification exchange, with what it says about the endpoint.
    public static func classify(_ result: HTTPExchangeResult, now: Date) -> (Verdict, EndpointObservation) {
        switch HTTPAnswerClassifier.classify(result, handled: answeredClientErrors, expectsJSON: true, now: now) {
        case .configuration(let reason):
            return (.configuration(reason: reason), .configuration(reason: reason))
        case .endpointFailure(let reason, let retryAfter, _):
            return (.transient(reason: reason, retryAfter: retryAfter), .failure(reason: reason))
        case .answer(let response):
            return classify(response)
        }
    }

    static func classify(_ response: HTTPResponse) -> (Verdict, EndpointObservation) {
        switch response.status {
        case 202:
            return (.transient(reason: Reason(.merchantAcceptedPending), retryAfter: nil), .healthy)
        case 409:
            return (.transient(reason: Reason(.merchantConflictInProgress), retryAfter: nil), .healthy)
        case 425:
            return (.transient(reason: Reason(.merchantTooEarly), retryAfter: nil), .healthy)
        case 200:
            break
        case 400...499:
            let reason = HTTPAnswerClassifier.reasonField(in: response.body) ?? "no reason given"
            return (.escalate(reason: Reason(.merchantHTTP(response.status), detail: reason)), .healthy)
        default:
            return (.transient(reason: Reason(.merchantHTTP(response.status)), retryAfter: nil), .healthy)
        }
        // A "result" named twice is ambiguous (we would read the first, most parsers the last):
        // unparseable, never a grant or a rejection.
        guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(response.body),
            let result = object["result"]?.stringValue, object.members.count(where: { $0.key == "result" }) == 1
        else {
            return (.transient(reason: Reason(.merchantUnparseableAnswer), retryAfter: nil), .failure(reason: Reason(.unparseableAnswer)))
        }
        switch result {
        case "verified":
            return (.verified(transactionID: object["transaction_id"]?.stringOrNumberText), .healthy)
        case "rejected":
            let reason = object["reason"]?.stringValue.map(sanitize) ?? "rejected by the merchant"
            return (.rejected(reason: reason), .healthy)
        case "pending":
            return (.transient(reason: Reason(.merchantPending), retryAfter: nil), .healthy)
        default:
            return (.transient(reason: Reason(.merchantUnknownResult), retryAfter: nil), .failure(reason: Reason(.unknownResult)))
        }
    }

    /// The delivery endpoint's answers: 2xx or 409 (already delivered) deliver; 422 and other
    /// 4xx escalate; the rest as for the merchant protocol. The revocation endpoint's answers
    /// are read the same way (DESIGN §5a); `endpoint` names the endpoint in the reasons
    /// (`delivery_http_422: …`, `revocation_http_422: …`).
    public static func classifyDelivery(
        _ result: HTTPExchangeResult, now: Date, endpoint: VerificationEndpoint = .delivery
    ) -> (DeliveryVerdict, EndpointObservation) {
        switch HTTPAnswerClassifier.classify(result, handled: answeredClientErrors, now: now) {
        case .configuration(let reason):
            return (.configuration(reason: reason), .configuration(reason: reason))
        case .endpointFailure(let reason, let retryAfter, _):
            return (.transient(reason: reason, retryAfter: retryAfter), .failure(reason: reason))
        case .answer(let response):
            switch response.status {
            case 200...299, 409:
                return (.delivered, .healthy)
            default:
                let reason = HTTPAnswerClassifier.reasonField(in: response.body) ?? "no reason given"
                return (.escalate(reason: Reason(.endpointHTTP(endpoint, response.status), detail: reason)), .healthy)
            }
        }
    }

    /// What a delivery answer means.
    public enum DeliveryVerdict: Sendable, Hashable {
        case delivered
        case transient(reason: Reason, retryAfter: Duration?)
        case escalate(reason: Reason)
        case configuration(reason: Reason)
    }

    static func sanitize(_ text: String) -> String {
        return PrintableText.excerpt(text, maximumScalars: 120)
    }
}
