import Foundation
import ReconcileCore
import Testing
import TestSupport

@Suite("App Store Server API answers")
struct AppStoreAnswerTests {
    typealias Verdict = AppStoreAnswerClassifier.Verdict

    static func body(_ code: Int) -> [UInt8] {
        Array(#"{"errorCode":\#(code),"errorMessage":"x"}"#.utf8)
    }

    @Test("Apple's error bodies (fixtures) are read")
    func fixtures() {
        let cases: [(String, Int, Verdict)] = [
            ("asapi-error-4000006-invalid-transaction-id.json", 400, .reject(reason: Reason(.invalidTransactionID))),
            ("asapi-error-4040010-transaction-id-not-found.json", 404, .transactionNotFound),
            ("asapi-error-5000000-general-internal.json", 500, .internalError),
            ("asapi-error-4290000-rate-limit-exceeded.json", 429,
             .transient(reason: Reason(.appStore(429)), endpointLevel: true, retryAfter: .seconds(7), rateLimited: true)),
        ]
        for (file, status, expected) in cases {
            let body = Fixtures.bytes("appstore/" + file)
            #expect(AppStoreAnswerClassifier.classify(status: status, body: body, retryAfter: .seconds(7)) == expected, "\(file)")
        }
    }

    @Test("every error code of the table has its class", arguments: [
        (200, nil, Verdict.answer),
        (404, 4040002, .transient(reason: Reason(.appStore(4040002)), endpointLevel: false)),
        (404, 4040004, .transient(reason: Reason(.appStore(4040004)), endpointLevel: false)),
        (404, 4040006, .transient(reason: Reason(.appStore(4040006)), endpointLevel: false)),
        (500, 5000001, .transient(reason: Reason(.appStore(5000001)), endpointLevel: true)),
        (500, 5000000, .internalError),
        (404, 4040010, .transactionNotFound),
        (400, 4000006, .reject(reason: Reason(.invalidTransactionID))),
        (400, 4000008, .reject(reason: Reason(.invalidOriginalTransactionID))),
        (400, 4000187, .reject(reason: Reason(.transactionIDNotOriginal))),
        (404, 4040001, .reject(reason: Reason(.accountNotFound))),
        (404, 4040005, .reject(reason: Reason(.originalTransactionNotFound))),
        (503, nil, .transient(reason: Reason(.appStoreHTTP(503)), endpointLevel: true)),
        (404, 4049999, .transient(reason: Reason(.appStore(4049999)), endpointLevel: false)),
    ] as [(Int, Int?, Verdict)])
    func table(_ status: Int, _ code: Int?, _ expected: Verdict) {
        let body = code.map(Self.body) ?? []
        #expect(AppStoreAnswerClassifier.classify(status: status, body: body, retryAfter: nil) == expected)
    }

    @Test("401, 403, a 4040003, a bare 404 and other 400s are configuration errors; the 401 names the missing release")
    func configuration() {
        for (status, body) in [(401, Array("Unauthenticated\n".utf8)), (403, []), (404, Self.body(4040003)), (404, []), (400, Self.body(4000000))] {
            guard case .configuration(let reason) = AppStoreAnswerClassifier.classify(status: status, body: body, retryAfter: nil) else {
                Issue.record("\(status) \(String(decoding: body, as: UTF8.self)) is not a configuration error")
                continue
            }
            #expect(reason.description.hasPrefix("appstore_"))
        }
        guard case .configuration(let reason) = AppStoreAnswerClassifier.classify(status: 401, body: [], retryAfter: nil) else { return }
        #expect(reason.description.contains("no release"))
    }

    @Test("a 429's Retry-After in epoch milliseconds pauses until then")
    func retryAfterMilliseconds() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let wait = RetryAfter.parse("1700000012500", now: now)
        #expect(wait == .milliseconds(12_500))
        #expect(RetryAfter.parse("30", now: now) == .seconds(30))
    }

    @Test("error codes: a number in a JSON object, else none")
    func errorCode() {
        #expect(AppStoreAnswerClassifier.errorCode(in: Self.body(4040010)) == 4040010)
        #expect(AppStoreAnswerClassifier.errorCode(in: Array(#"{"errorCode":"4040010"}"#.utf8)) == nil)
        #expect(AppStoreAnswerClassifier.errorCode(in: Array("<html>".utf8)) == nil)
        #expect(AppStoreAnswerClassifier.errorCode(in: []) == nil)
    }
}
