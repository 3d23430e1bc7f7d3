import Foundation

/// Classifies the Google Play Developer API's answers (DESIGN §5 "Google Play";
/// `docs/protocols/google-play.md` §3, §5): the HTTP status, refined by the error body's `reason`.
public enum PlayAnswerClassifier {
    /// What an answer to `purchases.products.get` means.
    public enum Verdict: Sendable, Hashable {
        /// 200: read the purchase.
        case answer
        /// 401: the access token was refused; refresh it once, then it is a configuration error.
        case unauthorized(reason: Reason)
        /// 410 `purchaseTokenNoLongerValid`: refunded or long expired.
        case tokenExpired(reason: Reason)
        /// 400 or 404 with Google's error body: the token (or product) is unknown. Transient for a
        /// few attempts (a fresh purchase may not be visible yet), then rejected.
        case tokenNotFound(reason: Reason)
        /// Retry later. `endpointLevel` answers count towards the endpoint's circuit;
        /// `rateLimited` pauses its bucket until `retryAfter`.
        case transient(reason: Reason, endpointLevel: Bool, retryAfter: Duration? = nil, rateLimited: Bool = false)
        /// Our request or the service account is wrong: alert, open the circuit, charge no order.
        case configuration(reason: Reason)
        /// Anything else: a person decides (a paid order is never rejected on a surprise).
        case escalate(reason: Reason)
    }

    /// Google's error reasons that mean "too many requests" (HTTP 403 or 429).
    public static let rateLimitReasons: Set<String> = ["rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "dailyLimitExceeded"]

    /// Classifies an answer to a purchase request. `retryAfter` is the parsed `Retry-After`.
    public static func classify(status: Int, body: [UInt8], retryAfter: Duration?) -> Verdict {
        let error = PlayError(body)
        switch status {
        case 200:
            return .answer
        case 410:
            return .tokenExpired(reason: Reason(.play(410, googleReason: error.reason)))
        case 400, 404:
            // Google answers both with its JSON error; a page that is not one is a wrong URL.
            guard error.isGoogleError else {
                return status == 404
                    ? .configuration(reason: Reason(.play(404), detail: "no such endpoint (check [GooglePlay] URL=)"))
                    : .configuration(reason: Reason(.play(400), detail: "Google refused our request as malformed"))
            }
            if error.reason == "purchaseTokenDoesNotMatchPackageName" {
                return .tokenNotFound(reason: Reason(.play(status, googleReason: error.reason), detail: "the token belongs to another package"))
            }
            return .tokenNotFound(reason: Reason(.play(status, googleReason: error.reason)))
        case 401:
            return .unauthorized(reason: Reason(.play(401, googleReason: error.reason), detail: "Google refused the access token"))
        case 403 where error.reason.map(rateLimitReasons.contains) ?? false:
            return .transient(reason: Reason(.play(403, googleReason: error.reason)), endpointLevel: true, retryAfter: retryAfter, rateLimited: true)
        case 403:
            return .configuration(reason: Reason(
                .play(403, googleReason: error.reason), detail: "the service account may not read this app's purchases (Play Console permissions, linked project)"))
        case 429:
            return .transient(reason: Reason(.play(429, googleReason: error.reason)), endpointLevel: true, retryAfter: retryAfter, rateLimited: true)
        case 409:
            return .transient(reason: Reason(.play(409, googleReason: error.reason)), endpointLevel: false)
        case 408, 500...599:
            return .transient(reason: Reason(.playHTTP(status, googleReason: error.reason)), endpointLevel: true, retryAfter: retryAfter)
        case 300...399:
            return .transient(reason: Reason(.playHTTPRedirectNotFollowed(status)), endpointLevel: true)
        case 400...499:
            return .escalate(reason: Reason(.playHTTP(status, googleReason: error.reason)))
        default:
            return .transient(reason: Reason(.playHTTP(status)), endpointLevel: true, retryAfter: retryAfter)
        }
    }

    /// What an answer to `:acknowledge` or `:consume` means.
    public enum ActionVerdict: Sendable, Hashable {
        /// 2xx: done.
        case done
        /// 400 `invalidPurchaseState`: look at the purchase again before deciding.
        case recheck(reason: Reason)
        case unauthorized(reason: Reason)
        case transient(reason: Reason, endpointLevel: Bool, retryAfter: Duration? = nil, rateLimited: Bool = false)
        case configuration(reason: Reason)
        /// The purchase is gone (410, 404) or Google refused for another reason: a person decides.
        case escalate(reason: Reason)
    }

    /// Classifies an answer to an acknowledge or consume request.
    public static func classifyAction(status: Int, body: [UInt8], retryAfter: Duration?) -> ActionVerdict {
        let error = PlayError(body)
        switch status {
        case 200...299:
            return .done
        case 400 where error.reason == "invalidPurchaseState":
            return .recheck(reason: Reason(.play(400, googleReason: error.reason)))
        case 409:
            return .transient(reason: Reason(.play(409, googleReason: error.reason)), endpointLevel: false)
        default:
            switch classify(status: status, body: body, retryAfter: retryAfter) {
            case .answer: return .done
            case .unauthorized(let reason): return .unauthorized(reason: reason)
            case .transient(let reason, let endpointLevel, let retryAfter, let rateLimited):
                return .transient(reason: reason, endpointLevel: endpointLevel, retryAfter: retryAfter, rateLimited: rateLimited)
            case .configuration(let reason): return .configuration(reason: reason)
            case .tokenExpired(let reason), .tokenNotFound(let reason), .escalate(let reason): return .escalate(reason: reason)
            }
        }
    }
}
