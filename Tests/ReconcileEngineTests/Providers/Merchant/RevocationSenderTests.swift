import Foundation
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The revocation sender (DESIGN §5a): the recorded notice posted byte for byte under its
/// Idempotency-Key, the answers read as deliveries are, every exchange reported to the gate, the
/// token in the request's header only.
@Suite("Revocation sender")
struct RevocationSenderTests {
    static let url = "https://backend.example/iap/revoke"
    static let token = "rev-SECRET-token-4711"
    /// As the recording rule writes it: members in its order, spacing and escapes its own.
    static let payload = #"{"event":"revoked","order_id":"A1","product_id":"gems","transaction_id":"1000000123","store":"app_store","quantity":2,"reason":"refunded","revoked_at":"2026-11-30T05:27:06Z","environment":"Production","user_id":"user-9","application_username":null, "note":"caf\u00e9"}"#

    func sender(_ transport: ScriptedTransport, token: String? = Self.token) -> RevocationSender {
        RevocationSender(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(5), bearerToken: token), transport: transport)
    }

    func notice(kind: OutboxKind = .revocationNotice, payload: String = Self.payload) -> ClaimedAction {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return ClaimedAction(
            action: OutboxAction(
                reference: 7, orderReference: 3, orderID: "A1", kind: kind, endpoint: .revocation, idempotencyKey: "A1:revoked:1",
                payload: payload, attempts: 1, createdAt: now, updatedAt: now),
            productID: "gems", proof: OrderProof(receipt: "QUJD"))
    }

    func send(_ answers: [HTTPExchangeResult], token: String? = Self.token) async -> (OutboxOutcome, ScriptedTransport, RecordingGate) {
        let transport = ScriptedTransport([Self.url: answers])
        let gate = RecordingGate()
        let outcome = await sender(transport, token: token).send(notice(), gate: gate)
        return (outcome, transport, gate)
    }

    @Test("one POST: the payload's bytes as the body, Idempotency-Key the action's key, JSON, the bearer token")
    func request() async throws {
        let (outcome, transport, _) = await send([answer(200, "{}")])
        #expect(outcome.verdict == .done(Reason(.notified, detail: "the merchant took the notice (HTTP 200)")))
        let request = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(request.method == "POST" && request.url == Self.url)
        #expect(request.body == Array(Self.payload.utf8), "the body is the recorded payload, byte for byte")
        func header(_ name: String) -> [String] { request.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }
        #expect(header("Idempotency-Key") == ["A1:revoked:1"])
        #expect(header("Content-Type") == ["application/json"])
        #expect(header("Authorization") == ["Bearer \(Self.token)"])
        #expect(header("Reconcile-Attempt").isEmpty, "the key, not an attempt number, identifies the event")
        #expect(request.timeout == .seconds(5))

        let (_, anonymous, _) = await send([answer(200, "{}")], token: nil)
        #expect(anonymous.requests.first?.headers.contains { $0.name.lowercased() == "authorization" } == false)
    }

    @Test("the same key and body on every attempt of one notice")
    func sameKeyOnRetry() async {
        let transport = ScriptedTransport([Self.url: [answer(503, "{}"), failure(.timeout), answer(204, "")]])
        let sender = sender(transport)
        var verdicts: [OutboxOutcome.Verdict] = []
        for _ in 0..<3 { verdicts.append(await sender.send(notice(), gate: RecordingGate()).verdict) }
        #expect(verdicts.last == .done(Reason(.notified, detail: "the merchant took the notice (HTTP 204)")))
        let keys = transport.requests.map { $0.headers.first { $0.name == "Idempotency-Key" }?.value }
        #expect(keys == ["A1:revoked:1", "A1:revoked:1", "A1:revoked:1"])
        #expect(Set(transport.requests.map(\.body)) == [Array(Self.payload.utf8)])
    }

    @Test(
        "answers classified as deliveries: 2xx and 409 done; 408, 429, 5xx and transport failures retried (an endpoint failure); 401/403/404 configuration; 422 and other 4xx escalated",
        arguments: [
            (answer(200, "{}"), "done", "healthy"), (answer(202, ""), "done", "healthy"), (answer(409, "{}"), "done", "healthy"),
            (answer(408, "{}"), "transient", "failure"), (answer(429, "{}", headers: [HTTPHeader("Retry-After", "7")]), "transient", "failure"),
            (answer(500, "{}"), "transient", "failure"), (answer(503, "{}"), "transient", "failure"),
            (failure(.timeout), "transient", "failure"), (failure(.connectionReset), "transient", "failure"),
            (answer(401, "{}"), "configuration", "configuration"), (answer(403, "{}"), "configuration", "configuration"),
            (answer(404, "{}"), "configuration", "configuration"),
            (answer(422, #"{"reason":"unknown order"}"#), "escalate", "healthy"), (answer(400, "{}"), "escalate", "healthy"),
            (answer(410, "{}"), "escalate", "healthy"),
        ])
    func classification(_ result: HTTPExchangeResult, verdict expected: String, observation expectedObservation: String) async {
        let (outcome, transport, gate) = await send([result])
        #expect(transport.requests.count == 1)
        let verdict: String
        switch outcome.verdict {
        case .done: verdict = "done"
        case .transient: verdict = "transient"
        case .configuration: verdict = "configuration"
        case .escalate: verdict = "escalate"
        case .skipped, .notSent: verdict = "other"
        }
        #expect(verdict == expected)
        let reports = gate.reports.withLock { $0 }
        #expect(reports.count == 1 && reports.first?.0 == .revocation, "each exchange is reported to the revocation endpoint's gate")
        let observation: String
        switch reports.first?.1 {
        case .healthy?: observation = "healthy"
        case .failure?: observation = "failure"
        case .configuration?: observation = "configuration"
        case nil: observation = "none"
        }
        #expect(observation == expectedObservation)
        #expect(outcome.records.count == 1 && outcome.records.first?.endpoint == .revocation)
    }

    @Test("a 429's Retry-After is handed on; a refusal names the status and the merchant's reason")
    func details() async {
        let (limited, _, _) = await send([answer(429, "{}", headers: [HTTPHeader("Retry-After", "7")])])
        #expect(limited.verdict == .transient(Reason(.http(429)), retryAfter: .seconds(7)))
        let (refused, _, _) = await send([answer(422, #"{"reason":"unknown order"}"#)])
        #expect(refused.verdict == .escalate(Reason(.revocationRefused, detail: "revocation_http_422: unknown order")))
    }

    @Test("a Retry-After date is read against the attempt's clock, not the machine's")
    func retryAfterDate() async {
        let clock = ManualClock(wall: Date(timeIntervalSince1970: 1_900_000_000))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: clock.now().addingTimeInterval(90))
        let transport = ScriptedTransport([Self.url: [answer(429, "{}", headers: [HTTPHeader("Retry-After", date)])]])
        let outcome = await sender(transport).send(notice(), gate: RecordingGate(clock: clock))
        #expect(outcome.verdict == .transient(Reason(.http(429)), retryAfter: .seconds(90)), "Retry-After: \(date)")
        #expect(outcome.records.first?.startedAt == clock.now())
    }

    @Test("the token is never in the outcome: not in a record, a reason or a detail, whatever the answer")
    func noTokenInRecords() async {
        let results = [
            answer(200, "{}"), answer(401, "{}"), answer(403, #"{"error":"forbidden"}"#), answer(422, #"{"reason":"unknown order"}"#),
            answer(503, "{}"), failure(.tls), failure(.timeout),
        ]
        for result in results {
            let (outcome, transport, _) = await send([result])
            #expect(transport.requests.first?.headers.contains { $0.value.contains(Self.token) } == true, "the request carries it")
            #expect(!"\(outcome)".contains("SECRET"), "\(outcome)")
        }
    }

    @Test("nothing is sent for an action that is not a revocation notice, or whose payload is not a JSON object: a person looks")
    func refusesWithoutSending() async {
        let transport = ScriptedTransport([Self.url: [answer(200, "{}")]])
        let wrongKind = await sender(transport).send(notice(kind: .playAcknowledge), gate: RecordingGate())
        #expect(wrongKind.verdict == .escalate(Reason(.unknownAction, detail: "play_acknowledge is not a revocation notice")))
        for payload in ["", "[1,2]", "{\"event\":", "null"] {
            let outcome = await sender(transport).send(notice(payload: payload), gate: RecordingGate())
            guard case .escalate(let reason) = outcome.verdict else {
                Issue.record("\(payload): \(outcome.verdict)")
                continue
            }
            #expect(reason.code == .revocationPayloadInvalid)
        }
        #expect(transport.requests.isEmpty)
    }
}
