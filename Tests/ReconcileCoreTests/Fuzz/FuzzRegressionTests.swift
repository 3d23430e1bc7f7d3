import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

/// Inputs the fuzz targets (`scripts/fuzz`, `Fuzz/Targets`) found to crash the daemon's code or
/// break an invariant, each run down the same path as in the target. The inputs are also in the
/// targets' seed corpora (`Fuzz/Corpus/TARGET/regression-*`), so every fuzz run replays them.
@Suite("Inputs found by fuzzing")
struct FuzzRegressionTests {
    let now = Date(timeIntervalSince1970: 1_764_487_566)

    // MARK: - apple-answer

    /// apple-answer crash-7116781d: `purchase_date_ms` as a string of 20 digits. Not an Int64,
    /// so it went through Double, and `Int64(1.76e19)` trapped ("Double value cannot be converted
    /// to Int64"): one answer would stop the daemon, every time it retried the order.
    @Test("a purchase date beyond Int64 is no date, not a crash")
    func purchaseDateBeyondInt64() throws {
        let body = #"{"status":0,"eatus":0,"environment":"Prodï»¿uc{ion","receipt":{"bid":"com.example.app","product_id":"com.example.gems.100","transaction_id":1000000000000001,"quantity":"1","purchase_date_ms":"17644875660087566000"}}"#
        let answer = try AppleReceiptAnswer.parse(Array(body.utf8))
        #expect(answer.items.count == 1)
        #expect(answer.items[0].purchaseDateMilliseconds == nil)
        #expect(AppleAnswerClassifier.classify(answer, from: .production, mayBounce: true) == .valid)
        for text in ["9223372036854775808", "1e19", "-1e300", "9.3e18", "NaN", "inf"] {
            #expect(AppleReceiptItem.milliseconds(text) == nil, "\(text)")
        }
        #expect(AppleReceiptItem.milliseconds("1764487566000.9") == 1_764_487_566_000)
        #expect(AppleReceiptItem.milliseconds("-9223372036854775808") == Int64.min)
    }

    /// apple-answer invariant "valid with \"receipt\" given more than once": of two `receipt`
    /// members the first counted (most parsers take the last). An answer whose verdict rests on
    /// a key named twice is ambiguous, and is never taken as success.
    @Test("an answer that names status or receipt twice is unparseable", arguments: [
        #"{"status":0,"receipt":{"bundle_id":"com.example.app","in_app":[]},"receipt":{"bundle_id":"com.other","in_app":[]}}"#,
        #"{"status":0,"status":21003,"receipt":{"bundle_id":"com.example.app"}}"#,
        #"{"status":21003,"receipt":{},"status":"0"}"#,
    ])
    func decisiveKeyTwice(body: String) {
        #expect(throws: AppleReceiptAnswer.Unparseable.self) { try AppleReceiptAnswer.parse(Array(body.utf8)) }
    }

    @Test("duplicates elsewhere in an answer are still tolerated")
    func otherDuplicates() throws {
        let answer = try AppleReceiptAnswer.parse(Array(
            #"{"status":0,"environment":"Sandbox","environment":"Production","receipt":{"bid":"a","bid":"b","in_app":[]}}"#.utf8))
        #expect(answer.status == 0 && answer.hasReceipt && answer.environment == "Sandbox" && answer.bundleID == "a")
    }

    /// Found on the apple-answer target's path (the match the store makes for a valid answer):
    /// two purchases of the product, one with a `purchase_date_ms` at Int64's edge, and
    /// `abs(date - reference)` trapped with an arithmetic overflow inside the claim transaction.
    @Test("purchase dates at Int64's edges are matched, not a crash")
    func extremePurchaseDates() {
        let items = [
            AppleReceiptItem(productID: "p", transactionID: "1", purchaseDateMilliseconds: .min),
            AppleReceiptItem(productID: "p", transactionID: "2", purchaseDateMilliseconds: .max),
            AppleReceiptItem(productID: "p", transactionID: "3", purchaseDateMilliseconds: 1_700_000_000_000),
            AppleReceiptItem(productID: "p", transactionID: "4"),
        ]
        for (seconds, expected) in [(1_700_000_000.0, "3"), (-1e9, "3"), (0, "3")] {
            let order = ReceiptMatcher.OrderKey(orderID: "A1", productID: "p", referenceTime: Date(timeIntervalSince1970: seconds))
            #expect(ReceiptMatcher.match(items, for: order, claims: [:]) == .matched(items[Int(expected)! - 1]))
        }
        let onlyExtremes = Array(items[0..<2]) + [items[3]]
        let early = ReceiptMatcher.OrderKey(orderID: "A1", productID: "p", referenceTime: Date(timeIntervalSince1970: -1e9))
        #expect(ReceiptMatcher.match(onlyExtremes, for: early, claims: [:]) == .matched(items[0]))
        #expect(ReceiptMatcher.distance(.min, .max) == UInt64.max)
        #expect(ReceiptMatcher.distance(.max, .min) == UInt64.max)
        #expect(ReceiptMatcher.distance(-5, 5) == 10)
    }

    // MARK: - merchant-answer

    /// merchant-answer crash-abb0d737: `429` with `Retry-After: 088223372233781501`, read as
    /// epoch milliseconds 2.8 million years ahead. The scheduler logs the pause with
    /// `TimeSpan.format`, whose microseconds overflowed Int64 and trapped: any endpoint could
    /// stop the daemon with one header.
    @Test("a Retry-After millions of years ahead is classified and formatted, not a crash")
    func retryAfterBeyondMicroseconds() throws {
        let result = HTTPExchangeResult(
            .success(HTTPResponse(status: 429, headers: [HTTPHeader("retry-after", "088223372233781501")])), latency: .milliseconds(20))
        let (verdict, _) = MerchantAnswerClassifier.classify(result, now: now)
        guard case .transient(Reason(.http(429)), let retryAfter?) = verdict else {
            Issue.record("not a transient 429 with a Retry-After: \(verdict)")
            return
        }
        #expect(retryAfter > .seconds(86_400 * 365 * 1_000_000))
        #expect(TimeSpan.format(retryAfter) == "106751991d 4h 54s 775ms 807us")
        #expect(TimeSpan.format(.seconds(max(retryAfter.inSeconds, 1))) == "106751991d 4h 54s 775ms 807us")
        #expect(Duration.seconds(Int64.max).totalMicroseconds == .max)
        #expect(Duration.seconds(Int64.min).totalMicroseconds == .min)
        #expect(Duration.seconds(9_223_372_036_854).totalMicroseconds == 9_223_372_036_854_000_000)
        #expect(Duration.seconds(-1.5).totalMicroseconds == -1_500_000)
    }

    /// merchant-answer, with the check added for the Apple answer above: `{"result":"verified",
    /// "result":"rejected"}` granted the order on the first of two contradicting results.
    @Test("a merchant answer that names result twice is unparseable, never a grant")
    func resultTwice() {
        for body in [#"{"result":"verified","result":"rejected"}"#, #"{"result":"rejected","result":"verified"}"#] {
            let result = HTTPExchangeResult(.success(HTTPResponse(status: 200, body: Array(body.utf8))), latency: .milliseconds(20))
            let (verdict, observation) = MerchantAnswerClassifier.classify(result, now: now)
            #expect(verdict == .transient(reason: Reason(.merchantUnparseableAnswer), retryAfter: nil))
            #expect(observation == .failure(reason: Reason(.unparseableAnswer)))
        }
    }

    // MARK: - configuration

    /// configuration target (replaying `MaxRate=0.0000000000000000000000001`; the fuzzer had not
    /// written that many zeros in 145,000 executions): an accepted rate of 1e-25 per second made
    /// the scheduler's wait for the next token `.seconds(1e25)`, beyond what Duration holds: a
    /// trap as soon as the bucket ran dry. Rates below 0.001 are now a configuration error.
    @Test("the smallest MaxRate still gives a wait that is a Duration")
    func tinyRate() throws {
        let tiny = "[Verifier]\nKind=http\nURL=https://merchant.example/verify\nMaxRate=0.0000000000000000000000001\n"
        #expect(throws: ConfigurationError.self) {
            try ConfigurationParser.parse([ConfigurationSource(path: "/etc/reconciled/reconciled.conf", text: tiny)])
        }
        let lowest = try ConfigurationParser.parse([ConfigurationSource(
            path: "/etc/reconciled/reconciled.conf", text: "[Verifier]\nKind=http\nURL=https://merchant.example/verify\nMaxRate=0.001\n")])
        var bucket = TokenBucket(rate: lowest.verifier.maxRate, burst: lowest.verifier.burst, now: 0)
        while bucket.take(now: 0) {}
        let wait = max(.milliseconds(1), bucket.nextTokenTime(now: 0) - 0)
        #expect(wait == .seconds(1000))
    }
}
