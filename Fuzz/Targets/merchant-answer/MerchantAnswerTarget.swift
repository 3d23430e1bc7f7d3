// Fuzz target: the merchant endpoint's answers (Kind=http) and the delivery endpoint's, as
// MerchantVerifier and DeliveryClient classify them. The input is the answer: a first line
// `STATUS` or `STATUS RETRY-AFTER`, then the body. An input whose first line is not a status is
// all body, with status 200.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMerchantAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    MerchantAnswerTarget.run(inputBytes(data, size))
    return 0
}

enum MerchantAnswerTarget {
    static let now = Date(timeIntervalSince1970: 1_764_487_566)

    static func run(_ input: [UInt8]) {
        let response = answer(input)
        let result = HTTPExchangeResult(.success(response), latency: .milliseconds(20))
        let (verdict, observation) = MerchantAnswerClassifier.classify(result, now: now)
        check(verdict, observation, response)
        let (delivery, _) = MerchantAnswerClassifier.classifyDelivery(result, now: now)
        check(delivery, response)
        _ = HTTPAnswerClassifier.reasonField(in: response.body)
    }

    static func answer(_ input: [UInt8]) -> HTTPResponse {
        let newline = input.firstIndex(of: 0x0A) ?? input.count
        let head = String(decoding: input[..<newline], as: UTF8.self)
        let words = head.split(separator: " ", maxSplits: 1)
        guard let first = words.first, first.count == 3, let status = Int(first), (100...599).contains(status) else {
            return HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "application/json")], body: input)
        }
        var headers = [HTTPHeader("content-type", "application/json")]
        if words.count > 1 { headers.append(HTTPHeader("retry-after", String(words[1]))) }
        let body = newline < input.count ? Array(input[(newline + 1)...]) : []
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    static func check(_ verdict: MerchantAnswerClassifier.Verdict, _ observation: EndpointObservation, _ response: HTTPResponse) {
        switch verdict {
        case .verified:
            // Granted only for a well-formed success answer: HTTP 200 and an object whose one
            // "result" is "verified", as Foundation reads it too.
            invariant(response.status == 200, "verified on HTTP \(response.status)")
            invariant(topLevelCount(of: "result", in: response.body) == 1, "verified with \"result\" given more than once")
            invariant(observation == .healthy, "a grant from an unhealthy endpoint")
            if FoundationJSON.canJudge(response.body) {
                let object = FoundationJSON.object(response.body)
                invariant(object?["result"] as? String == "verified", "verified, but Foundation reads another result")
            }
        case .rejected(let reason):
            // A paid order is rejected only on an explicit {"result":"rejected"}.
            invariant(response.status == 200, "rejected on HTTP \(response.status)")
            invariant(topLevelCount(of: "result", in: response.body) == 1, "rejected with \"result\" given more than once")
            if FoundationJSON.canJudge(response.body) {
                invariant(FoundationJSON.object(response.body)?["result"] as? String == "rejected", "rejected without result rejected")
            }
            invariant(!hasLineBreak(reason) && reason.count <= 121, "an unprintable rejection reason")
        case .transient(let reason, let retryAfter):
            invariant(!hasLineBreak(reason), "an unprintable reason")
            if let retryAfter { invariant(retryAfter >= .zero, "a negative Retry-After") }
            // Holding a wait converted the way the scheduler does must not trap.
            if let retryAfter { _ = TimeSpan.format(retryAfter) }
        case .escalate(let reason), .configuration(let reason):
            invariant(!hasLineBreak(reason), "an unprintable reason")
        }
    }

    static func check(_ verdict: MerchantAnswerClassifier.DeliveryVerdict, _ response: HTTPResponse) {
        switch verdict {
        case .delivered:
            invariant((200...299).contains(response.status) || response.status == 409, "delivered on HTTP \(response.status)")
        case .transient(let reason, let retryAfter):
            invariant(!hasLineBreak(reason), "an unprintable reason")
            if let retryAfter { invariant(retryAfter >= .zero, "a negative Retry-After") }
        case .escalate(let reason), .configuration(let reason):
            invariant(!hasLineBreak(reason), "an unprintable reason")
        }
    }
}
