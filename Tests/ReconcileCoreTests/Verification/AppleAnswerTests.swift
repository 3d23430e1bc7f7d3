import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

@Suite("Apple verifyReceipt answers")
struct AppleAnswerTests {
    func fixture(_ name: String) throws -> AppleReceiptAnswer {
        try AppleReceiptAnswer.parse(Fixtures.bytes("apple/\(name)"))
    }

    func classify(_ body: String, from environment: AppleAnswerClassifier.Environment = .production, mayBounce: Bool = true) throws
        -> AppleAnswerClassifier.Verdict
    {
        AppleAnswerClassifier.classify(try AppleReceiptAnswer.parse(Array(body.utf8)), from: environment, mayBounce: mayBounce)
    }

    @Test("the real sandbox success: bundle, environment and both in_app items")
    func success() throws {
        let answer = try fixture("verifyreceipt-0-success-sandbox-in_app.json")
        #expect(answer.status == 0)
        #expect(answer.environment == "Sandbox")
        #expect(answer.bundleID == "com.sumiapp.GridDiary")
        #expect(answer.items.map(\.productID) == ["com.sumiapp.GridDiary.pro", "com.sumiapp.griddiary.test"])
        #expect(answer.items[0] == AppleReceiptItem(
            productID: "com.sumiapp.GridDiary.pro", transactionID: "1000000118990828", originalTransactionID: "1000000118990828",
            quantity: 1, purchaseDateMilliseconds: 1_409_628_546_000))
        #expect(AppleAnswerClassifier.classify(answer, from: .sandbox, mayBounce: false) == .valid)
    }

    @Test(
        "every real fixture's class",
        arguments: [
            ("verifyreceipt-21007-sandbox-receipt-sent-to-production.json", AppleAnswerClassifier.Environment.production,
             AppleAnswerClassifier.Verdict.bounce(to: .sandbox, status: 21007)),
            ("verifyreceipt-21008-production-receipt-sent-to-sandbox.json", .sandbox, .bounce(to: .production, status: 21008)),
            ("verifyreceipt-21002-malformed-receipt-data.json", .production, .bounce(to: .sandbox, status: 21002)),
            ("verifyreceipt-21002-malformed-receipt-data.json", .sandbox, .malformed),
            ("verifyreceipt-21005-server-unavailable.json", .production, .transient(reason: Reason(.apple(21005)), endpointLevel: true)),
            ("verifyreceipt-21004-shared-secret-mismatch.json", .production,
             .configuration(reason: Reason(.apple(21004), detail: "the shared secret does not match (21004)"))),
        ])
    func fixtures(name: String, environment: AppleAnswerClassifier.Environment, verdict: AppleAnswerClassifier.Verdict) throws {
        #expect(AppleAnswerClassifier.classify(try fixture(name), from: environment, mayBounce: true) == verdict)
    }

    @Test("the second answer of a bounce is classified afresh and never bounces again")
    func noDoubleBounce() throws {
        #expect(try classify(#"{"status":21007}"#, from: .sandbox, mayBounce: false) == .transient(reason: Reason(.appleAfterBounce(21007)), endpointLevel: false))
        #expect(try classify(#"{"status":21008}"#, from: .production, mayBounce: false) == .transient(reason: Reason(.appleAfterBounce(21008)), endpointLevel: false))
        #expect(try classify(#"{"status":21002}"#, from: .sandbox, mayBounce: false) == .malformed)
        #expect(try classify(#"{"status":21007}"#, from: .sandbox, mayBounce: true) == .transient(reason: Reason(.appleAfterBounce(21007)), endpointLevel: false))
    }

    @Test(
        "the class table",
        arguments: [
            (#"{"status":21000}"#, AppleAnswerClassifier.Verdict.configuration(reason: Reason(.apple(21000), detail: "Apple could not read our request (21000)"))),
            (#"{"status":21001}"#, .transient(reason: Reason(.apple(21001)), endpointLevel: false)),
            (#"{"status":21003}"#, .reject(reason: Reason(.receiptNotAuthenticated))),
            (#"{"status":21009}"#, .transient(reason: Reason(.apple(21009)), endpointLevel: true)),
            (#"{"status":21010,"is_retryable":false}"#, .reject(reason: Reason(.accountNotFound))),
            (#"{"status":0}"#, .transient(reason: Reason(.appleZeroWithoutReceipt), endpointLevel: false)),
            (#"{"status":99999}"#, .transient(reason: Reason(.appleStatus(99999)), endpointLevel: false)),
            (#"{"status":"21005"}"#, .transient(reason: Reason(.apple(21005)), endpointLevel: true)),
        ])
    func table(body: String, verdict: AppleAnswerClassifier.Verdict) throws {
        #expect(try classify(body) == verdict)
    }

    @Test(
        "21100–21199 with every form of the retryable flag",
        arguments: [
            (#"{"status":21104,"is_retryable":true}"#, true),
            (#"{"status":21104,"is_retryable":1}"#, true),
            (#"{"status":21150,"is-retryable":true}"#, true),
            (#"{"status":21150,"is-retryable":"1"}"#, true),
            (#"{"status":21199}"#, true),
            (#"{"status":21100,"is_retryable":false}"#, false),
            (#"{"status":21100,"is_retryable":0}"#, false),
            (#"{"status":21104,"is-retryable":false}"#, false),
            (#"{"status":21104,"is-retryable":"false"}"#, false),
        ])
    func retryableFlag(body: String, retryable: Bool) throws {
        let verdict = try classify(body)
        let status = try AppleReceiptAnswer.parse(Array(body.utf8)).status
        if retryable {
            #expect(verdict == .transient(reason: Reason(parsing: "apple_\(status)"), endpointLevel: true))
        } else {
            #expect(verdict == .reject(reason: Reason(parsing: "apple_\(status)_not_retryable")))
        }
    }

    @Test("ids and dates as numbers or strings, latest_receipt_info, iOS 6-style receipts")
    func shapes() throws {
        let answer = try AppleReceiptAnswer.parse(Array("""
            {"status":0,"environment":"Production","receipt":{"bundle_id":"b","in_app":[
              {"product_id":"p","transaction_id":1000000000000000001,"original_transaction_id":"7","purchase_date_ms":1700000000000,"quantity":"2"}]},
             "latest_receipt_info":[{"product_id":"p","transaction_id":"42","purchase_date_ms":"1700000000123.5","cancellation_date_ms":"1700000100000"}]}
            """.utf8))
        #expect(answer.items.count == 2)
        #expect(answer.items[0].transactionID == "1000000000000000001")
        #expect(answer.items[0].quantity == 2)
        #expect(answer.items[1].purchaseDateMilliseconds == 1_700_000_000_123)
        #expect(answer.items[1].isCancelled)
        let ios6 = try AppleReceiptAnswer.parse(Array(
            #"{"status":0,"receipt":{"bid":"com.example","product_id":"p","transaction_id":"33993399","quantity":"1"}}"#.utf8))
        #expect(ios6.bundleID == "com.example")
        #expect(ios6.items.map(\.transactionID) == ["33993399"])
    }

    @Test("bodies that are not answers", arguments: ["", "<html>", "[1]", #"{"environment":"Sandbox"}"#, #"{"status":"ok"}"#, #"{"status":0"#])
    func unparseable(body: String) {
        #expect(throws: AppleReceiptAnswer.Unparseable.self) { try AppleReceiptAnswer.parse(Array(body.utf8)) }
    }
}
