import Foundation
import ReconcileCore
import ReconcileCrypto
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The consumption answer sender (DESIGN §5a): the rule's request PUT to Send Consumption
/// Information v2 on its environment's base URL with a signed bearer token; Apple's answers
/// classified; nothing sent once Apple's deadline has passed; never a token in the outcome.
@Suite("Consumption sender")
struct ConsumptionSenderTests {
    static let base = "https://api.example"
    static let url = "https://api.example/inApps/v2/transactions/consumption/2000000123"
    static let body = #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_FULL"}"#
    static let payload = #"{"transaction_id":"2000000123","environment":"Production","request":\#(body)}"#
    static let now = Date()

    /// An In-App Purchase key, made once (openssl is slow).
    static let key = Mutex<ES256PrivateKey?>(nil)

    static func tokens() async throws -> AppStoreTokenCache {
        if key.withLock({ $0 }) == nil {
            let made = try ES256PrivateKey(pem: try await TestCertificateChain.newKeyPEM())
            key.withLock { $0 = $0 ?? made }
        }
        return AppStoreTokenCache(
            key: key.withLock { $0! }, keyID: "KEY1234567", issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: "com.example.app")
    }

    func sender(_ transport: ScriptedTransport, endpoint: VerificationEndpoint = .production) async throws -> ConsumptionSender {
        ConsumptionSender(
            endpoint: endpoint, api: EndpointSettings(url: Self.base + "/", timeout: .seconds(5)), tokens: try await Self.tokens(),
            transport: transport)
    }

    func action(kind: OutboxKind = .consumptionAnswer, payload: String = Self.payload, deadline: Date = Self.now.addingTimeInterval(3600))
        -> ClaimedAction
    {
        ClaimedAction(
            action: OutboxAction(
                reference: 7, orderReference: 3, orderID: "A1", kind: kind, endpoint: .production, idempotencyKey: "A1:consumption:c-1",
                payload: payload, attempts: 1, createdAt: Self.now, updatedAt: Self.now, deadline: deadline),
            productID: "gems", proof: OrderProof(transactionID: "2000000123"))
    }

    func send(_ answers: [HTTPExchangeResult], _ claimed: ClaimedAction? = nil, clock: ManualClock? = nil) async throws
        -> (OutboxOutcome, ScriptedTransport, RecordingGate)
    {
        let transport = ScriptedTransport([Self.url: answers])
        let gate = RecordingGate(clock: clock)
        let outcome = try await sender(transport).send(claimed ?? action(), gate: gate)
        return (outcome, transport, gate)
    }

    @Test("one PUT to /inApps/v2/transactions/consumption/{transactionId}: the rule's request as the JSON body, a signed bearer token")
    func request() async throws {
        let (outcome, transport, _) = try await send([answer(202, "")])
        #expect(outcome.verdict == .done(Reason(.answered, detail: "Apple took the consumption information (HTTP 202)")))
        let request = try #require(transport.requests.only)
        #expect(request.method == "PUT" && request.url == Self.url)
        #expect(request.body == Array(Self.body.utf8))
        func header(_ name: String) -> [String] { request.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }
        #expect(header("Content-Type") == ["application/json"])
        let authorization = try #require(header("Authorization").only)
        #expect(authorization.hasPrefix("Bearer ey") && authorization.split(separator: ".").count == 3, "an ES256 JWT")
        #expect(outcome.records.only?.endpoint == .production && outcome.records.only?.environment == "Production")
    }

    @Test("the sandbox sender reports to the sandbox endpoint")
    func sandbox() async throws {
        let transport = ScriptedTransport([Self.url: [answer(202, "")]])
        let gate = RecordingGate()
        let outcome = try await sender(transport, endpoint: .sandbox).send(action(), gate: gate)
        #expect(outcome.records.only?.endpoint == .sandbox && outcome.records.only?.environment == "Sandbox")
        #expect(gate.reports.withLock { $0.map(\.0) } == [.sandbox])
    }

    @Test(
        "answers: 200/202 done; 429, 5xx, retryable codes and transport failures retried; 400 and 404 escalated with Apple's code; 401/403 configuration",
        arguments: [
            (answer(200, ""), "done", "healthy"), (answer(202, ""), "done", "healthy"),
            (answer(429, "{}", headers: [HTTPHeader("Retry-After", "7")]), "transient", "failure"), (answer(500, "{}"), "transient", "failure"),
            (answer(503, "{}"), "transient", "failure"), (answer(500, #"{"errorCode":5000000}"#), "transient", "failure"),
            (answer(404, #"{"errorCode":4040002}"#), "transient", "healthy"),
            (failure(.timeout), "transient", "failure"), (failure(.connectionReset), "transient", "failure"),
            (answer(400, #"{"errorCode":4000035,"errorMessage":"Invalid request."}"#), "escalate:appstore_4000035", "healthy"),
            (answer(400, #"{"errorCode":4000036}"#), "escalate:appstore_4000036", "healthy"),
            (answer(404, #"{"errorCode":4040010}"#), "escalate:appstore_4040010", "healthy"),
            (answer(400, ""), "escalate:appstore_http_400", "healthy"),
            (answer(401, ""), "configuration", "configuration"), (answer(403, "{}"), "configuration", "configuration"),
        ])
    func classification(_ result: HTTPExchangeResult, verdict expected: String, observation expectedObservation: String) async throws {
        let (outcome, transport, gate) = try await send([result])
        #expect(transport.requests.count == 1)
        let verdict: String
        switch outcome.verdict {
        case .done: verdict = "done"
        case .transient: verdict = "transient"
        case .configuration: verdict = "configuration"
        case .escalate(let reason): verdict = "escalate:\(reason.code)"
        case .skipped, .notSent: verdict = "other"
        }
        #expect(verdict == expected)
        let reports = gate.reports.withLock { $0 }
        #expect(reports.count == 1 && reports.first?.0 == .production)
        let observation: String
        switch reports.first?.1 {
        case .healthy?: observation = "healthy"
        case .failure?: observation = "failure"
        case .configuration?: observation = "configuration"
        case nil: observation = "none"
        }
        #expect(observation == expectedObservation)
    }

    @Test("a 429's Retry-After is handed on")
    func retryAfter() async throws {
        let (limited, _, _) = try await send([answer(429, "{}", headers: [HTTPHeader("Retry-After", "7")])])
        #expect(limited.verdict == .transient(Reason(.appStore(429)), retryAfter: .seconds(7)))
    }

    @Test("the deadline is read on the attempt's clock: a second before it the answer goes, a second after it does not")
    func deadlineOnTheAttemptsClock() async throws {
        let clock = ManualClock(wall: Self.now)
        let claimed = action(deadline: Self.now.addingTimeInterval(60))
        clock.stepWall(by: 59)
        let (before, beforeTransport, _) = try await send([answer(202, "")], claimed, clock: clock)
        #expect(beforeTransport.requests.count == 1)
        #expect(before.records.first?.startedAt == Self.now.addingTimeInterval(59), "the exchange is dated by the attempt's clock")
        clock.stepWall(by: 2)
        let (after, afterTransport, _) = try await send([answer(202, "")], claimed, clock: clock)
        #expect(afterTransport.requests.isEmpty)
        guard case .escalate(let reason) = after.verdict else {
            Issue.record("not escalated: \(after.verdict)")
            return
        }
        #expect(reason.code == .consumptionDeadlinePassed)
    }

    @Test("past Apple's deadline nothing is sent: escalated consumption_deadline_passed")
    func deadline() async throws {
        let (outcome, transport, gate) = try await send([answer(202, "")], action(deadline: Self.now.addingTimeInterval(-1)))
        #expect(transport.requests.isEmpty && outcome.records.isEmpty && gate.reports.withLock { $0 }.isEmpty)
        guard case .escalate(let reason) = outcome.verdict else {
            Issue.record("not escalated: \(outcome.verdict)")
            return
        }
        #expect(reason.code == .consumptionDeadlinePassed)
    }

    @Test("nothing is sent for another kind of action or a payload the rule did not write")
    func refusesWithoutSending() async throws {
        let (wrongKind, t1, _) = try await send([answer(202, "")], action(kind: .revocationNotice))
        #expect(wrongKind.verdict == .escalate(Reason(.unknownAction, detail: "revocation_notice is not a consumption answer")) && t1.requests.isEmpty)
        for payload in ["[]", #"{"transaction_id":"2000000123"}"#, #"{"request":{}}"#, "not json"] {
            let (outcome, transport, _) = try await send([answer(202, "")], action(payload: payload))
            guard case .escalate(let reason) = outcome.verdict else {
                Issue.record("\(payload): \(outcome.verdict)")
                continue
            }
            #expect(reason.code == .consumptionPayloadInvalid && transport.requests.isEmpty, "\(payload)")
        }
    }

    @Test("the token is never in the outcome: not in a record, a reason or a detail, whatever the answer")
    func noTokenInOutcome() async throws {
        for result in [answer(202, ""), answer(401, "{}"), answer(400, #"{"errorCode":4000035}"#), answer(503, "{}"), failure(.tls)] {
            let (outcome, transport, _) = try await send([result])
            let token = try #require(transport.requests.first?.headers.first { $0.name == "Authorization" }?.value.dropFirst("Bearer ".count))
            #expect(!"\(outcome)".contains(token), "\(outcome)")
        }
    }
}

extension Collection {
    /// The one element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
