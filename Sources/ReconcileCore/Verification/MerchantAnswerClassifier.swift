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
        case rejected(reason: String)
        case transient(reason: String, retryAfter: Duration?)
        case escalate(reason: String)
        case configuration(reason: String)
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
            return (.transient(reason: "merchant_accepted_pending", retryAfter: nil), .healthy)
        case 409:
            return (.transient(reason: "merchant_conflict_in_progress", retryAfter: nil), .healthy)
        case 425:
            return (.transient(reason: "merchant_too_early", retryAfter: nil), .healthy)
        case 200:
            break
        case 400...499:
            let reason = HTTPAnswerClassifier.reasonField(in: response.body) ?? "no reason given"
            return (.escalate(reason: "merchant_http_\(response.status): \(reason)"), .healthy)
        default:
            return (.transient(reason: "merchant_http_\(response.status)", retryAfter: nil), .healthy)
        }
        // A "result" named twice is ambiguous (we would read the first, most parsers the last):
        // unparseable, never a grant or a rejection.
        guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(response.body),
            let result = object["result"]?.stringValue, object.members.count(where: { $0.key == "result" }) == 1
        else {
            return (.transient(reason: "merchant_unparseable_answer", retryAfter: nil), .failure(reason: "unparseable_answer"))
        }
        switch result {
        case "verified":
            return (.verified(transactionID: object["transaction_id"]?.stringOrNumberText), .healthy)
        case "rejected":
            let reason = object["reason"]?.stringValue.map(sanitize) ?? "rejected by the merchant"
            return (.rejected(reason: reason), .healthy)
        case "pending":
            return (.transient(reason: "merchant_pending", retryAfter: nil), .healthy)
        default:
            return (.transient(reason: "merchant_unknown_result", retryAfter: nil), .failure(reason: "unknown_result"))
        }
    }

    /// The delivery endpoint's answers: 2xx or 409 (already delivered) deliver; 422 and other
    /// 4xx escalate; the rest as for the merchant protocol. The revocation endpoint's answers
    /// are read the same way (DESIGN §5a); `label` names the endpoint in the reasons
    /// (`delivery_http_422: …`, `revocation_http_422: …`).
    public static func classifyDelivery(
        _ result: HTTPExchangeResult, now: Date, label: String = "delivery"
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
                return (.escalate(reason: "\(label)_http_\(response.status): \(reason)"), .healthy)
            }
        }
    }

    /// What a delivery answer means.
    public enum DeliveryVerdict: Sendable, Hashable {
        case delivered
        case transient(reason: String, retryAfter: Duration?)
        case escalate(reason: String)
        case configuration(reason: String)
    }

    static func sanitize(_ text: String) -> String {
        return PrintableText.excerpt(text, maximumScalars: 120)
    }
}
