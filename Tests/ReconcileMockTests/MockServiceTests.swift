import Foundation
import ReconcileCore
import Testing
@testable import ReconcileMock
import ReconcileFoundation

@Suite("Mock verification service")
struct MockServiceTests {
    func post(_ service: MockService, _ path: String, _ body: String, headers: [HTTPHeader] = []) -> (Int, JSONValue?) {
        let reply = service.handle(ServerRequest(method: "POST", path: path, query: "", headers: headers, body: Array(body.utf8)))
        return (reply.status, try? JSONParser().parse(reply.body))
    }

    @Test("a test receipt survives base64 and back")
    func receiptRoundTrip() {
        let receipt = MockReceipt(
            environment: "Sandbox", items: [.init(productID: "p", transactionID: "1", purchaseDateMilliseconds: 5, cancellationDateMilliseconds: 9, appAccountToken: "t")],
            statuses: [21005, 0], isRetryable: false, inLatestReceiptInfo: true, merchantAnswers: ["503", "verified"])
        #expect(MockReceipt(base64: receipt.base64) == receipt)
        #expect(MockReceipt(base64: "not base64 at all!") == nil)
    }

    @Test("Apple: production bounces sandbox receipts with 21007, sandbox answers; statuses follow the receipt")
    func apple() {
        let service = MockService(settings: .init(sharedSecret: "s3cret"))
        let sandbox = MockReceipt(environment: "Sandbox", items: [.init(productID: "p", transactionID: "1")]).base64
        #expect(post(service, "/verifyReceipt", #"{"receipt-data":"\#(sandbox)","password":"s3cret"}"#).1?["status"] == .integer(21007))
        let answer = post(service, "/sandbox/verifyReceipt", #"{"receipt-data":"\#(sandbox)","password":"s3cret"}"#).1
        #expect(answer?["status"] == .integer(0))
        #expect(answer?["receipt"]?["in_app"]?.arrayValue?.first?["transaction_id"] == .string("1"))
        #expect(post(service, "/sandbox/verifyReceipt", #"{"receipt-data":"\#(sandbox)","password":"wrong"}"#).1?["status"] == .integer(21004))
        let flaky = MockReceipt(items: [.init(productID: "p", transactionID: "2")], statuses: [21005, 21005, 0]).base64
        let statuses = (0..<4).map { _ in post(service, "/verifyReceipt", #"{"receipt-data":"\#(flaky)","password":"s3cret"}"#).1?["status"] }
        #expect(statuses == [.integer(21005), .integer(21005), .integer(0), .integer(0)])
        #expect(post(service, "/verifyReceipt", #"{"receipt-data":"Zm9v","password":"s3cret"}"#).1?["status"] == .integer(21002))
    }

    @Test("merchant: answers by receipt, checks the token, counts keys")
    func merchant() {
        let service = MockService(settings: .init(token: "tok"))
        let auth = [HTTPHeader("authorization", "Bearer tok"), HTTPHeader("idempotency-key", "A1"), HTTPHeader("reconcile-attempt", "1")]
        #expect(post(service, "/merchant/verify", #"{"order_id":"A1"}"#).0 == 401)
        let receipt = MockReceipt(merchantAnswers: ["pending", "verified"]).base64
        #expect(post(service, "/merchant/verify", #"{"order_id":"A1","receipt":"\#(receipt)"}"#, headers: auth).1?["result"] == .string("pending"))
        #expect(post(service, "/merchant/verify", #"{"order_id":"A1","receipt":"\#(receipt)"}"#, headers: auth).1?["result"] == .string("verified"))
        _ = post(service, "/merchant/verify", #"{"order_id":"B2"}"#, headers: auth)  // key A1 for order B2
        let stats = service.stats
        #expect(stats.grantRequests == ["A1": 2, "B2": 1])
        #expect(stats.grantsSucceeded == ["A1": 1, "B2": 1])
        #expect(stats.idempotencyMismatches == 1)
        #expect(MockStats(json: stats.json) == stats)
    }

    @Test("faults: outage, status rates, Retry-After, garbage")
    func faults() throws {
        let service = MockService()
        var faults = MockFaults()
        try faults.apply(try JSONParser().parse(#"{"outage":true,"retry_after":"7"}"#).objectValue!)
        service.setFaults(faults)
        let outage = service.handle(ServerRequest(method: "POST", path: "/deliver", query: "", headers: [], body: Array(#"{"order_id":"A"}"#.utf8)))
        #expect(outage.status == 503)
        #expect(outage.headers.contains(HTTPHeader("Retry-After", "7")))
        try faults.apply(try JSONParser().parse(#"{"reset":true,"status_rates":{"429":1.0}}"#).objectValue!)
        service.setFaults(faults)
        #expect(post(service, "/deliver", #"{"order_id":"A"}"#).0 == 429)
        #expect(throws: MockServerError.self) { try faults.apply(try JSONParser().parse(#"{"nonsense":1}"#).objectValue!) }
        // A garbled answer: the work is done, the status kept, the body garbage.
        try faults.apply(try JSONParser().parse(#"{"reset":true,"garbage_rate":1.0}"#).objectValue!)
        service.setFaults(faults)
        let garbled = service.handle(ServerRequest(method: "POST", path: "/deliver", query: "", headers: [HTTPHeader("Idempotency-Key", "G")], body: Array(#"{"order_id":"G"}"#.utf8)))
        #expect(garbled.status == 200)
        #expect(String(decoding: garbled.body, as: UTF8.self).hasPrefix("<html>garbage"))
        #expect(service.stats.deliveriesSucceeded["G"] == 1)
        // Stats and config are never faulted.
        #expect(service.handle(ServerRequest(method: "GET", path: "/_mock/stats", query: "", headers: [], body: [])).status == 200)
    }

    @Test("revocation: every notice recorded under its Idempotency-Key (count, answered 2xx, body, keys per order); revocation_status scripts the answer; faults apply; the stats survive JSON")
    func revocation() {
        let service = MockService(settings: .init(token: "tok"))
        let notice = #"{"event":"revoked","order_id":"A1","product_id":"gems","quantity":1}"#
        // As the server hands them on: names lowercased.
        let headers = [HTTPHeader("authorization", "Bearer tok"), HTTPHeader("idempotency-key", "A1:revoked:1"), HTTPHeader("content-type", "application/json")]
        #expect(post(service, "/revocation", notice, headers: headers).0 == 200)
        #expect(post(service, "/revocation", notice, headers: [headers[1], headers[2]]).0 == 401, "the token is checked")
        #expect(post(service, "/revocation", notice, headers: [headers[0]]).0 == 400, "a notice needs its key")
        #expect(post(service, "/_mock/config", #"{"revocation_status":503}"#).0 == 200)
        #expect(post(service, "/revocation", notice, headers: headers).0 == 503)
        #expect(post(service, "/_mock/config", #"{"revocation_status":200,"status_rates":{"500":1},"path_prefix":"/revocation"}"#).0 == 200)
        #expect(post(service, "/revocation", notice, headers: headers).0 == 500, "an injected fault answers before the endpoint")
        _ = post(service, "/_mock/config", #"{"reset":true}"#)
        #expect(post(service, "/revocation", notice, headers: headers).0 == 200)

        let stats = service.stats
        #expect(stats.revocations == ["A1:revoked:1": 3] && stats.revocationsSucceeded == ["A1:revoked:1": 2])
        #expect(stats.revocationKeys == ["A1": ["A1:revoked:1", "A1:revoked:1", "A1:revoked:1"]])
        #expect(stats.revocationBodies["A1:revoked:1"]?["event"] == .string("revoked"))
        #expect(stats.revocationContentTypeMismatches == 0)
        #expect(stats.byEndpoint["revocation"] == 6)
        #expect(MockStats(json: stats.json) == stats)
    }
}
