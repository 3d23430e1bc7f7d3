import Foundation
import ReconcileCore
import Testing
@testable import ReconcileEngine
import ReconcileFoundation

@Suite("Apple verifier: the bounce rules")
struct AppleVerifierTests {
    static let production = "https://buy.example/verifyReceipt"
    static let sandbox = "https://sandbox.example/verifyReceipt"
    static let valid = #"{"status":0,"environment":"Sandbox","receipt":{"bundle_id":"com.example.app","in_app":[{"product_id":"gems","transaction_id":"1"}]}}"#
    static let validProduction = #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.app","in_app":[{"product_id":"gems","transaction_id":"1"}]}}"#

    func verifier(_ transport: ScriptedTransport, allowSandbox: Bool = true) -> AppleVerifier {
        AppleVerifier(
            production: EndpointSettings(url: Self.production, timeout: .seconds(1)),
            sandbox: EndpointSettings(url: Self.sandbox, timeout: .seconds(1)), bundleID: "com.example.app",
            allowSandbox: allowSandbox, sharedSecret: "s3cret", transport: transport)
    }

    func verify(_ script: [String: [HTTPExchangeResult]], allowSandbox: Bool = true, gate: RecordingGate = RecordingGate())
        async -> (VerifierOutcome, ScriptedTransport)
    {
        let transport = ScriptedTransport(script)
        let outcome = await verifier(transport, allowSandbox: allowSandbox).verify(claimed(), gate: gate)
        return (outcome, transport)
    }

    @Test("production first; a valid answer is matched; the request carries receipt and secret")
    func productionFirst() async throws {
        let (outcome, transport) = await verify([Self.production: [answer(Self.validProduction)]])
        #expect(outcome.verdict == .match(items: [AppleReceiptItem(productID: "gems", transactionID: "1")], environment: "Production"))
        #expect(transport.requests.map(\.url) == [Self.production])
        let body = try JSONParser().parse(transport.requests[0].body)
        #expect(body["receipt-data"] == .string("QUJD"))
        #expect(body["password"] == .string("s3cret"))
        #expect(body["exclude-old-transactions"] == .bool(false))
        #expect(outcome.records.count == 1)
        #expect(outcome.records[0].verifierStatus == 0)
    }

    @Test("21007 goes once to the sandbox when allowed")
    func sandboxBounce() async {
        let (outcome, transport) = await verify([Self.production: [answer(#"{"status":21007}"#)], Self.sandbox: [answer(Self.valid)]])
        #expect(transport.requests.map(\.url) == [Self.production, Self.sandbox])
        #expect(outcome.verdict == .match(items: [AppleReceiptItem(productID: "gems", transactionID: "1")], environment: "Sandbox"))
        #expect(outcome.records.map(\.endpoint) == [.production, .sandbox])
    }

    @Test("21007 with AllowSandbox=no is rejected without asking the sandbox")
    func sandboxRefused() async {
        let (outcome, transport) = await verify([Self.production: [answer(#"{"status":21007}"#)]], allowSandbox: false)
        #expect(outcome.verdict == .reject(Reason(.sandboxNotAllowed, detail: "a sandbox receipt (21007), and AllowSandbox=no")))
        #expect(transport.requests.count == 1)
    }

    @Test("21002 from production tries the sandbox once; a sandbox receipt there still needs AllowSandbox")
    func malformedFromProduction() async {
        let (allowed, _) = await verify([Self.production: [answer(#"{"status":21002}"#)], Self.sandbox: [answer(Self.valid)]])
        guard case .match = allowed.verdict else { Issue.record("\(allowed.verdict)"); return }
        let (refused, _) = await verify([Self.production: [answer(#"{"status":21002}"#)], Self.sandbox: [answer(Self.valid)]], allowSandbox: false)
        #expect(refused.verdict == .reject(Reason(.sandboxNotAllowed, detail: "a sandbox receipt, and AllowSandbox=no")))
        let (both, _) = await verify([Self.production: [answer(#"{"status":21002}"#)], Self.sandbox: [answer(#"{"status":21002}"#)]])
        #expect(both.verdict == .malformed)
    }

    @Test("never bounces twice: the sandbox's 21007 or 21008 is classified afresh")
    func noSecondBounce() async {
        let (outcome, transport) = await verify([Self.production: [answer(#"{"status":21007}"#)], Self.sandbox: [answer(#"{"status":21008}"#)]])
        #expect(transport.requests.count == 2)
        #expect(outcome.verdict == .transient(Reason(.appleAfterBounce(21008))))
    }

    @Test("the sandbox's circuit open: the attempt is transient, nothing sent there")
    func sandboxClosed() async {
        let (outcome, transport) = await verify([Self.production: [answer(#"{"status":21007}"#)]], gate: RecordingGate(open: false))
        #expect(transport.requests.count == 1)
        #expect(outcome.verdict == .transient(Reason(.endpointCircuitOpen(.sandbox))))
    }

    @Test("another bundle escalates bundle_mismatch")
    func bundleMismatch() async {
        let other = #"{"status":0,"receipt":{"bundle_id":"com.other","in_app":[]}}"#
        let (outcome, _) = await verify([Self.production: [answer(other)]])
        #expect(outcome.verdict == .escalate(Reason(.bundleMismatch, detail: "the receipt is for \"com.other\", BundleID=com.example.app")))
    }

    @Test("endpoint health is reported per exchange")
    func reports() async {
        let gate = RecordingGate()
        _ = await verify([Self.production: [answer(#"{"status":21005}"#)]], gate: gate)
        _ = await verify([Self.production: [answer(503, "")]], gate: gate)
        _ = await verify([Self.production: [failure(.timeout)]], gate: gate)
        _ = await verify([Self.production: [answer("<html>")]], gate: gate)
        _ = await verify([Self.production: [answer(#"{"status":21004}"#)]], gate: gate)
        _ = await verify([Self.production: [answer(#"{"status":21003}"#)]], gate: gate)
        #expect(gate.observations == [
            .failure(reason: Reason(.apple(21005))), .failure(reason: Reason(.http(503))), .failure(reason: Reason(.timeout)), .failure(reason: Reason(.unparseableAnswer)),
            .configuration(reason: Reason(.apple(21004), detail: "the shared secret does not match (21004)")), .healthy,
        ])
    }

    @Test("an order without a receipt cannot be verified by Kind=apple")
    func noReceipt() async {
        let transport = ScriptedTransport([:])
        let outcome = await verifier(transport).verify(claimed(receipt: nil), gate: RecordingGate())
        #expect(outcome.verdict == .escalate(Reason(.noUsableProof, detail: "Kind=apple needs a receipt")))
        #expect(transport.requests.isEmpty)
    }
}

@Suite("Merchant verifier and delivery client")
struct MerchantVerifierTests {
    static let url = "https://merchant.example/verify"

    @Test("the merchant request: body, Idempotency-Key, Reconcile-Attempt, bearer token")
    func request() async throws {
        let transport = ScriptedTransport([Self.url: [answer(#"{"result":"verified","transaction_id":"77"}"#)]])
        let verifier = MerchantVerifier(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(1), bearerToken: "tok"), transport: transport)
        let outcome = await verifier.verify(claimed(attempt: 3), gate: RecordingGate())
        #expect(outcome.verdict == .granted(Grant(transactionID: "77", productID: "gems"), finishedBy: .merchant))
        let sent = try #require(transport.requests.first)
        #expect(sent.headers.contains(HTTPHeader("Idempotency-Key", "A1")))
        #expect(sent.headers.contains(HTTPHeader("Reconcile-Attempt", "3")))
        #expect(sent.headers.contains(HTTPHeader("Authorization", "Bearer tok")))
        let body = try JSONParser().parse(sent.body)
        #expect(body.objectValue?.keys == ["order_id", "product_id", "receipt", "transaction_id", "application_username", "user_id", "amount", "currency", "created_at"])
        #expect(body["amount"] == .string("4.99"))
    }

    @Test("a paid order is never rejected on a protocol error")
    func neverRejectOnProtocolError() async {
        for script in [answer(422, #"{"reason":"no"}"#), answer(400, "x"), answer(200, "garbage"), answer(500, ""), failure(.connectionReset)] {
            let transport = ScriptedTransport([Self.url: [script]])
            let outcome = await MerchantVerifier(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(1)), transport: transport)
                .verify(claimed(), gate: RecordingGate())
            if case .reject = outcome.verdict { Issue.record("rejected on \(script)") }
        }
    }

    @Test("delivery sends Apple's grant, not the client's amount; 409 counts as delivered")
    func delivery() async throws {
        let url = "https://backend.example/deliver"
        let transport = ScriptedTransport([url: [answer(409, "")]])
        let client = DeliveryClient(endpoint: EndpointSettings(url: url, timeout: .seconds(1)), transport: transport)
        let grant = Grant(transactionID: "1000", originalTransactionID: "900", productID: "gems.apple", quantity: 2, purchaseDateMilliseconds: 5, environment: "Sandbox")
        let outcome = await client.verify(claimed(grant: grant), gate: RecordingGate())
        #expect(outcome.verdict == .delivered)
        let body = try JSONParser().parse(try #require(transport.requests.first).body)
        #expect(body["product_id"] == .string("gems.apple"))
        #expect(body["quantity"] == .number("2"))
        #expect(body["transaction_id"] == .string("1000"))
        #expect(body["amount"] == nil)
        #expect(body.objectValue?.keys == [
            "order_id", "product_id", "transaction_id", "original_transaction_id", "quantity", "purchase_date_ms", "environment", "user_id", "application_username",
            "store", "package_name",
        ])
        #expect(body["store"] == .string("app_store") && body["package_name"] == .null)
    }
}
