import Foundation
import Testing
@testable import ReconcileCore

@Suite("Merchant and delivery answers")
struct MerchantAnswerTests {
    let now = Date(timeIntervalSince1970: 1_796_023_566)

    func exchange(_ status: Int, _ body: String = "", headers: [HTTPHeader] = []) -> HTTPExchangeResult {
        HTTPExchangeResult(.success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8))), latency: .milliseconds(5))
    }

    @Test(
        "the merchant protocol's answer table",
        arguments: [
            (200, #"{"result":"verified","transaction_id":"1000"}"#, MerchantAnswerClassifier.Verdict.verified(transactionID: "1000"), false),
            (200, #"{"result":"verified","transaction_id":1000}"#, .verified(transactionID: "1000"), false),
            (200, #"{"result":"verified"}"#, .verified(transactionID: nil), false),
            (200, #"{"result":"rejected","reason":"fraud"}"#, .rejected(reason: "fraud"), false),
            (200, #"{"result":"pending"}"#, .transient(reason: Reason(.merchantPending), retryAfter: nil), false),
            (200, "not json", .transient(reason: Reason(.merchantUnparseableAnswer), retryAfter: nil), true),
            (200, #"{"result":"maybe"}"#, .transient(reason: Reason(.merchantUnknownResult), retryAfter: nil), true),
            (202, "", .transient(reason: Reason(.merchantAcceptedPending), retryAfter: nil), false),
            (409, "", .transient(reason: Reason(.merchantConflictInProgress), retryAfter: nil), false),
            (425, "", .transient(reason: Reason(.merchantTooEarly), retryAfter: nil), false),
            (408, "", .transient(reason: Reason(.http(408)), retryAfter: nil), true),
            (500, "", .transient(reason: Reason(.http(500)), retryAfter: nil), true),
            (503, "", .transient(reason: Reason(.http(503)), retryAfter: nil), true),
            (302, "", .transient(reason: Reason(.httpRedirectNotFollowed(302)), retryAfter: nil), true),
            (401, "", .configuration(reason: Reason(.http(401), detail: "the endpoint refused our credentials")), true),
            (403, "", .configuration(reason: Reason(.http(403), detail: "the endpoint refused our credentials")), true),
            (404, "", .configuration(reason: Reason(.http(404), detail: "no such endpoint (check the URL)")), true),
            (422, #"{"reason":"unknown product"}"#, .escalate(reason: Reason(.merchantHTTP(422), detail: "unknown product")), false),
            (400, "garbage", .escalate(reason: Reason(.merchantHTTP(400), detail: "no reason given")), false),
        ])
    func merchant(status: Int, body: String, verdict: MerchantAnswerClassifier.Verdict, endpointFailure: Bool) {
        let (found, observation) = MerchantAnswerClassifier.classify(exchange(status, body), now: now)
        #expect(found == verdict)
        #expect(observation.isFailure == endpointFailure)
    }

    @Test(
        "a verified body under another declared content type is an endpoint failure; JSON types and none are read",
        arguments: [
            ("text/html", false), ("text/plain; charset=utf-8", false), ("application/octet-stream", false),
            ("application/json", true), ("Application/JSON; charset=UTF-8", true), ("application/problem+json", true), (nil, true),
        ] as [(String?, Bool)])
    func contentType(type: String?, read: Bool) {
        let headers = type.map { [HTTPHeader("Content-Type", $0)] } ?? []
        let (verdict, observation) = MerchantAnswerClassifier.classify(exchange(200, #"{"result":"verified"}"#, headers: headers), now: now)
        if read {
            #expect(verdict == .verified(transactionID: nil))
        } else {
            #expect(verdict == .transient(reason: Reason(.wrongContentType), retryAfter: nil))
            #expect(observation == .failure(reason: Reason(.wrongContentType)))
        }
        // A delivery's 2xx acknowledges whatever it carries (DESIGN §5).
        #expect(MerchantAnswerClassifier.classifyDelivery(exchange(200, "<html>", headers: headers), now: now).0 == .delivered)
    }

    @Test("429 and Retry-After in both forms")
    func rateLimited() {
        let (seconds, _) = MerchantAnswerClassifier.classify(exchange(429, headers: [HTTPHeader("retry-after", "30")]), now: now)
        #expect(seconds == .transient(reason: Reason(.http(429)), retryAfter: .seconds(30)))
        let (date, observation) = MerchantAnswerClassifier.classify(
            exchange(503, headers: [HTTPHeader("Retry-After", "Mon, 30 Nov 2026 07:28:06 GMT")]), now: now)
        #expect(date == .transient(reason: Reason(.http(503)), retryAfter: .seconds(120)))
        #expect(observation == .failure(reason: Reason(.http(503))))
    }

    @Test("transport failures are transient endpoint failures, never a grant")
    func failures() {
        for kind in [HTTPFailure.Kind.timeout, .connectionRefused, .connectionReset, .tls, .bodyTooLarge, .dns, .protocolError] {
            let result = HTTPExchangeResult(.failure(HTTPFailure(kind, "x")), latency: .seconds(1))
            #expect(MerchantAnswerClassifier.classify(result, now: now).0 == .transient(reason: Reason(.transport(kind)), retryAfter: nil))
            #expect(MerchantAnswerClassifier.classifyDelivery(result, now: now).0 == .transient(reason: Reason(.transport(kind)), retryAfter: nil))
        }
    }

    @Test(
        "the delivery answer table",
        arguments: [
            (200, MerchantAnswerClassifier.DeliveryVerdict.delivered), (201, .delivered), (204, .delivered), (409, .delivered),
            (422, .escalate(reason: Reason(.endpointHTTP(.delivery, 422), detail: "no reason given"))), (400, .escalate(reason: Reason(.endpointHTTP(.delivery, 400), detail: "no reason given"))),
            (503, .transient(reason: Reason(.http(503)), retryAfter: nil)), (401, .configuration(reason: Reason(.http(401), detail: "the endpoint refused our credentials"))),
        ])
    func delivery(status: Int, verdict: MerchantAnswerClassifier.DeliveryVerdict) {
        #expect(MerchantAnswerClassifier.classifyDelivery(exchange(status), now: now).0 == verdict)
    }
}
