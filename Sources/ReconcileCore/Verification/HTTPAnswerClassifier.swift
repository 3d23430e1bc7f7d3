import Foundation
import ReconcileFoundation

/// The parts of classifying an exchange that every protocol shares: transport failures,
/// redirects, rate limits, server errors and our own configuration errors.
public enum HTTPAnswerClassifier {
    /// What the exchange means before any protocol looks at the body.
    public enum Disposition: Sendable, Hashable {
        /// A 2xx (or a status the protocol handles itself): read the body.
        case answer(HTTPResponse)
        /// Retry later; the endpoint failed. `retryAfter` from the answer, if any; `rateLimited`
        /// for 429 (pause the endpoint's bucket).
        case endpointFailure(reason: Reason, retryAfter: Duration?, rateLimited: Bool)
        /// 401, 403, 404: our URL or credentials are wrong.
        case configuration(reason: Reason)
    }

    /// Sorts an exchange. `handled` lists the statuses the protocol reads itself (for example
    /// 202, 409, 422 for the merchant protocol). With `expectsJSON`, a 2xx that declares another
    /// content type (a proxy's or captive portal's page) is an endpoint failure, never an answer
    /// to read; an answer without `Content-Type` is read (its body must still parse).
    public static func classify(
        _ result: HTTPExchangeResult, handled: Set<Int> = [], expectsJSON: Bool = false, now: Date
    ) -> Disposition {
        let response: HTTPResponse
        switch result.outcome {
        case .failure(let failure):
            return .endpointFailure(reason: Reason(.transport(failure.kind)), retryAfter: nil, rateLimited: false)
        case .success(let answer):
            response = answer
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        switch response.status {
        case 200...299 where expectsJSON && !declaresJSON(response):
            return .endpointFailure(reason: Reason(.wrongContentType), retryAfter: nil, rateLimited: false)
        case 200...299:
            return .answer(response)
        case _ where handled.contains(response.status):
            return .answer(response)
        case 401, 403:
            return .configuration(reason: Reason(.http(response.status), detail: "the endpoint refused our credentials"))
        case 404:
            return .configuration(reason: Reason(.http(404), detail: "no such endpoint (check the URL)"))
        case 429:
            return .endpointFailure(reason: Reason(.http(429)), retryAfter: retryAfter, rateLimited: true)
        case 300...399:
            return .endpointFailure(reason: Reason(.httpRedirectNotFollowed(response.status)), retryAfter: nil, rateLimited: false)
        case 408, 500...599:
            return .endpointFailure(reason: Reason(.http(response.status)), retryAfter: retryAfter, rateLimited: false)
        default:
            return .endpointFailure(reason: Reason(.http(response.status)), retryAfter: retryAfter, rateLimited: false)
        }
    }

    /// Whether the answer is JSON as far as its `Content-Type` says: `application/json`,
    /// `text/json`, a `+json` type, or no content type at all.
    public static func declaresJSON(_ response: HTTPResponse) -> Bool {
        guard let value = response.header("content-type") else { return true }
        // The media type before any parameter, trimmed and lower-cased, as bytes (every answer
        // passes here).
        var type = Array(value.utf8.prefix { $0 != UInt8(ascii: ";") })
        while let last = type.last, last == 0x20 || last == 0x09 { type.removeLast() }
        let leading = type.prefix { $0 == 0x20 || $0 == 0x09 }.count
        type.removeFirst(leading)
        for index in type.indices where (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(type[index]) { type[index] |= 0x20 }
        return type.elementsEqual("application/json".utf8) || type.elementsEqual("text/json".utf8)
            || (type.starts(with: "application/".utf8) && type.count >= "application/+json".utf8.count && type.reversed().starts(with: "nosj+".utf8))
    }

    /// A short, printable excerpt of an error body's `reason` (or `error`, `message`) field, for
    /// an escalation reason; never the whole body.
    public static func reasonField(in body: [UInt8]) -> String? {
        guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(body) else { return nil }
        for key in ["reason", "error", "message", "errorMessage"] {
            if let text = object[key]?.stringValue, !text.isEmpty {
                return PrintableText.excerpt(text, maximumScalars: 120)
            }
        }
        return nil
    }
}
