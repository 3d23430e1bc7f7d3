import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Google Play: answers classified")
struct PlayAnswerClassifierTests {
    static func error(_ status: Int, _ reason: String) -> [UInt8] {
        Array(#"{"error":{"code":\#(status),"message":"m","errors":[{"message":"m","domain":"androidpublisher","reason":"\#(reason)"}]}}"#.utf8)
    }

    @Test("purchases.products.get: DESIGN §5's classes")
    func purchases() {
        typealias C = PlayAnswerClassifier
        #expect(C.classify(status: 200, body: [], retryAfter: nil) == .answer)
        #expect(C.classify(status: 410, body: Self.error(410, "purchaseTokenNoLongerValid"), retryAfter: nil)
            == .tokenExpired(reason: Reason(parsing: "play_410_purchaseTokenNoLongerValid")))
        #expect(C.classify(status: 404, body: Self.error(404, "purchaseTokenNotFound"), retryAfter: nil)
            == .tokenNotFound(reason: Reason(parsing: "play_404_purchaseTokenNotFound")))
        #expect(C.classify(status: 400, body: Self.error(400, "invalid"), retryAfter: nil) == .tokenNotFound(reason: Reason(.play(400, googleReason: "invalid"))))
        // Not Google's error body: our URL is wrong.
        if case .configuration = C.classify(status: 404, body: Array("<html>Not Found</html>".utf8), retryAfter: nil) {} else {
            Issue.record("a 404 page that is not Google's error is a configuration error")
        }
        #expect(C.classify(status: 401, body: Self.error(401, "authError"), retryAfter: nil) == .unauthorized(reason: Reason(parsing: "play_401_authError: Google refused the access token")))
        if case .configuration(let reason) = C.classify(status: 403, body: Self.error(403, "permissionDenied"), retryAfter: nil) {
            #expect(reason.description.hasPrefix("play_403_permissionDenied"))
        } else {
            Issue.record("403 permissionDenied is a configuration error")
        }
        for reason in ["rateLimitExceeded", "userRateLimitExceeded"] {
            #expect(C.classify(status: 403, body: Self.error(403, reason), retryAfter: .seconds(7))
                == .transient(reason: Reason(parsing: "play_403_\(reason)"), endpointLevel: true, retryAfter: .seconds(7), rateLimited: true))
        }
        #expect(C.classify(status: 429, body: [], retryAfter: nil) == .transient(reason: Reason(.play(429)), endpointLevel: true, retryAfter: nil, rateLimited: true))
        #expect(C.classify(status: 503, body: Self.error(503, "backendError"), retryAfter: nil)
            == .transient(reason: Reason(parsing: "play_http_503_backendError"), endpointLevel: true))
        #expect(C.classify(status: 409, body: Self.error(409, "concurrentUpdate"), retryAfter: nil)
            == .transient(reason: Reason(parsing: "play_409_concurrentUpdate"), endpointLevel: false))
        #expect(C.classify(status: 418, body: [], retryAfter: nil) == .escalate(reason: Reason(.playHTTP(418))))
    }

    @Test("acknowledge and consume: 2xx done, 400 invalidPurchaseState looks again, 409 transient, 410 escalates")
    func actions() {
        typealias C = PlayAnswerClassifier
        #expect(C.classifyAction(status: 200, body: [], retryAfter: nil) == .done)
        #expect(C.classifyAction(status: 204, body: [], retryAfter: nil) == .done)
        #expect(C.classifyAction(status: 400, body: Self.error(400, "invalidPurchaseState"), retryAfter: nil)
            == .recheck(reason: Reason(parsing: "play_400_invalidPurchaseState")))
        #expect(C.classifyAction(status: 409, body: Self.error(409, "concurrentUpdate"), retryAfter: nil)
            == .transient(reason: Reason(parsing: "play_409_concurrentUpdate"), endpointLevel: false))
        #expect(C.classifyAction(status: 410, body: Self.error(410, "purchaseTokenNoLongerValid"), retryAfter: nil)
            == .escalate(reason: Reason(parsing: "play_410_purchaseTokenNoLongerValid")))
        #expect(C.classifyAction(status: 500, body: [], retryAfter: nil) == .transient(reason: Reason(.playHTTP(500)), endpointLevel: true))
    }

    @Test("an error reason is a short printable code, whatever the body says")
    func reasons() {
        let body = Array(#"{"error":{"errors":[{"reason":"bad\nreason with spaces and more than sixty characters in it, so it is cut here"}]}}"#.utf8)
        guard case .escalate(let reason) = PlayAnswerClassifier.classify(status: 422, body: body, retryAfter: nil) else {
            Issue.record("422 escalates")
            return
        }
        #expect(!reason.description.contains(" ") && !reason.description.contains("\n") && reason.description.count < 80, "\(reason)")
    }

    @Test("the token endpoint: a token on 200; invalid_grant a configuration error; Google's retryable errors transient; no token, no success")
    func token() {
        typealias T = PlayTokenAnswer
        #expect(T.classify(status: 200, body: Array(#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#.utf8), retryAfter: nil)
            == .token(T(accessToken: "ya29.x", expiresIn: 3599)))
        #expect(T.classify(status: 200, body: Array(#"{"access_token":"ya29.x","expires_in":"120"}"#.utf8), retryAfter: nil)
            == .token(T(accessToken: "ya29.x", expiresIn: 120)))
        let refused = T.classify(
            status: 400, body: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8), retryAfter: nil)
        guard case .configuration(let reason) = refused else {
            Issue.record("invalid_grant is a configuration error")
            return
        }
        #expect(reason.description.hasPrefix("token_http_400_invalid_grant: Invalid JWT Signature.") && reason.description.contains("NTP"))
        #expect(T.classify(status: 400, body: Array(#"{"error":"temporarily_unavailable"}"#.utf8), retryAfter: nil)
            == .transient(reason: Reason(.tokenHTTP(400, error: "temporarily_unavailable")), endpointLevel: true))
        #expect(T.classify(status: 503, body: [], retryAfter: nil) == .transient(reason: Reason(.tokenHTTP(503)), endpointLevel: true))
        for body in [#"{"token_type":"Bearer"}"#, #"{"access_token":""}"#, #"{"access_token":"a","access_token":"b"}"#, "[]", #"{"access_token":"a b"}"#,
                     #"{"access_token":"a","expires_in":-5}"#] {
            if case .token = T.classify(status: 200, body: Array(body.utf8), retryAfter: nil) { Issue.record("a token from \(body)") }
        }
    }
}
