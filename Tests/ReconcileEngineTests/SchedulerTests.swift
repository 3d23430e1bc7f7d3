import Foundation
import ReconcileCore
import ReconcileStore
import Testing
import TestSupport
@testable import ReconcileEngine

/// The scheduler's limits and its handling of configurations (DESIGN §5–6), against a real store
/// and a scripted transport.
@Suite("Scheduler")
struct SchedulerTests {
    static let url = "https://merchant.example/verify"
    let directory = TemporaryDirectory(prefix: "scheduler")

    func settings(
        _ transport: any HTTPTransport, maxRate: Double? = nil, burst: Int = 10, threshold: Int = 10, cooldown: Duration = .seconds(1)
    ) -> Scheduler.Settings {
        var retry = Configuration.RetrySettings()
        retry.initialDelay = .milliseconds(10)
        retry.maxDelay = .milliseconds(20)
        retry.jitter = .none
        return Scheduler.Settings(
            verifier: MerchantVerifier(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(5)), transport: transport), delivery: nil,
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false), maxInFlight: 4, maxRate: maxRate,
            burst: burst, circuitThreshold: threshold, circuitCooldown: cooldown, circuitMaxCooldown: .seconds(5), requestTimeout: .seconds(5))
    }

    func circuit(_ scheduler: Scheduler, _ endpoint: VerificationEndpoint) async -> String? {
        await scheduler.status().endpoints.first { $0.endpoint == endpoint }?.circuit
    }

    @Test("a probe through the gate waits for a token, and only then counts as sent: the circuit never wedges half-open")
    func probeTakesToken() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        defer { store.close() }
        // One token every 500 ms, at most one at a time; one failure opens the circuit for 100 ms.
        let scheduler = Scheduler(
            store: store, settings: settings(ScriptedTransport([:]), maxRate: 2, burst: 1, threshold: 1, cooldown: .milliseconds(100)),
            logger: .discarding)
        // Before the first token is taken: a loaded machine may resume this task long after.
        let first = ContinuousClock.now
        #expect(await scheduler.acquire(.sandbox))
        await scheduler.report(.sandbox, .failure(reason: "http_503"), retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .sandbox) == "open")
        try await Task.sleep(for: .milliseconds(150))  // the cool-down is over; the next token is not there yet

        // The probe: sent with the next token, not before and not never.
        #expect(await scheduler.acquire(.sandbox), "the probe was refused")
        #expect(ContinuousClock.now - first >= .milliseconds(450), "the probe went without a token")
        #expect(await circuit(scheduler, .sandbox) == "half-open")
        await scheduler.report(.sandbox, .healthy, retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .sandbox) == "closed")
        #expect(await scheduler.acquire(.sandbox))
    }

    @Test("the scheduler's own probe goes with a token: after an opening, the next request waits for the bucket, however short the cool-down")
    func dispatchedProbeTakesToken() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        defer { store.close() }
        for orderID in ["P1", "P2"] {
            let text = OrderFixtures.orderJSON(orderID)
            _ = try store.ingest(
                [IngestCandidate(submission: try OrderFileParser().parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: orderID, fileName: "\(orderID).json")],
                verifierKind: .http, now: Date())
        }
        let transport = ScriptedTransport([
            Self.url: [answer(503, "busy"), answer(#"{"result":"verified","transaction_id":"1"}"#), answer(#"{"result":"verified","transaction_id":"2"}"#)]
        ])
        let scheduler = Scheduler(
            store: store, settings: settings(transport, maxRate: 1, burst: 1, threshold: 1, cooldown: .milliseconds(20)), logger: .discarding)
        let started = ContinuousClock.now
        let running = Task { await scheduler.run() }
        let finished = await eventually(timeout: .seconds(90)) { (try? store.countsByState()[.finished]) == 2 }
        await scheduler.stop(drainTimeout: .seconds(1))
        await running.value
        #expect(finished)
        let sent = transport.sentTimes
        #expect(sent.count == 3)
        // One token a second, one at most in the bucket: three requests (the failure, the probe,
        // the third) take three tokens, so the last leaves two seconds after the start at the
        // earliest. (Measured from the start: a loaded machine only delays the sends further.)
        #expect(try #require(sent.last) - started >= .milliseconds(1900), "\(sent.map { $0 - started })")
    }
}
