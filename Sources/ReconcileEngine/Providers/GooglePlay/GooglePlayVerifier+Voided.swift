import Foundation
import ReconcileCore

/// `voidedpurchases.list` (`docs/protocols/google-play.md` §4): the purchases Google voided, as the
/// polling of `[Notifications] Poll=` and the confirmation of Pub/Sub pushes read them — with
/// the verifier's access tokens, and its endpoint's circuit and bucket.
extension GooglePlayVerifier {
    /// Why a page could not be read, in a few words for the log (never a token or a body).
    public struct VoidedListFailure: Error, Sendable, Hashable {
        public var reason: Reason
    }

    /// One page, from `startTime` (milliseconds) to Google's now (an `endTime` from a clock
    /// ahead of Google's would be refused as in the future), or the one `pageToken` names. The
    /// caller took the request's token from the gate; a token refresh takes its own.
    public func voidedPage(
        package: String, startTime: Int64, pageToken: String?, gate: any EndpointGate
    ) async -> Result<PlayVoidedPurchase.Page, VoidedListFailure> {
        var exchanges = Exchanges()
        var query = "startTime=\(startTime)&maxResults=1000"
        if let pageToken { query += "&token=" + AppStoreVerifier.pathComponent(pageToken) }
        let path = "/androidpublisher/v3/applications/\(AppStoreVerifier.pathComponent(package))/purchases/voidedpurchases?\(query)"
        switch await exchange(method: "GET", path: path, body: [], exchanges: &exchanges, gate: gate, judge: Self.judgeVoidedPage) {
        case .answer(let page):
            return .success(page)
        case .verdict(let verdict):
            return .failure(VoidedListFailure(reason: verdict.failureReason))
        }
    }

    /// A `voidedpurchases.list` answer: a page, or why not. A 403 that is not a rate limit most
    /// often means the service account lacks "View financial data". A refusal of this request
    /// (403, 400, 404) says nothing of the endpoint's health — it is about this list, or this
    /// package — so it never opens `[GooglePlay]`'s circuit: verifications and acknowledgements
    /// go on (review: a package Google refuses must not stop them).
    static func judgeVoidedPage(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<PlayVoidedPurchase.Page> {
        guard let response = result.response else {
            return .of(HTTPAnswerClassifier.classify(result, now: now)) { _ in .init(.verdict(.transient(Reason(.unexpected)))) }
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        switch PlayAnswerClassifier.classify(status: response.status, body: response.body, retryAfter: retryAfter) {
        case .answer:
            return readBody(response) { body in
                let page = try PlayVoidedPurchase.parsePage(body)
                return .init(.answer(page), detail: "\(page.purchases.count) voided")
            }
        case .unauthorized(let reason):
            return .init(.verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description)
        case .configuration(let reason):
            let why = response.status == 403
                ? Reason(reason.code, detail: [reason.detail, "(voided purchases need the \"View financial data\" permission)"].compactMap { $0 }.joined(separator: " "))
                : reason
            return .init(.verdict(.configuration(why)), observation: .healthy, detail: why.description)
        case .tokenExpired(let reason), .tokenNotFound(let reason), .escalate(let reason):
            // No token is named in this request: a 4xx here is our request, or the package.
            return .init(.verdict(.configuration(reason)), observation: .healthy, detail: reason.description)
        }
    }
}
