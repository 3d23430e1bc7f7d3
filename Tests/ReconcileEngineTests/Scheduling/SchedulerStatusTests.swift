import Foundation
import ReconcileSystem
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// What the scheduler reports for `reconcilectl status` and the metrics file.
@Suite("Scheduler status")
struct SchedulerStatusTests {
    static let url = "https://merchant.example/verify"
    let directory = TemporaryDirectory(prefix: "scheduler")

    func exchange(_ status: Int, _ body: String, latency: Duration) -> HTTPExchangeResult {
        HTTPExchangeResult(.success(HTTPResponse(status: status, body: Array(body.utf8))), latency: latency)
    }

    @Test("each request's duration is recorded for its endpoint; outcomes by class; the observer hears of moved orders")
    func requestDurations() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        let text = OrderFixtures.orderJSON("A1")
        let submission = try OrderFileParser().parse(Array(text.utf8))
        _ = try store.ingest(
            [IngestCandidate(submission: submission, raw: Array(text.utf8), contentHash: "h", fileName: "A1.json")], verifierKind: .http,
            now: Date())
        let transport = ScriptedTransport([
            Self.url: [
                exchange(503, "busy", latency: .milliseconds(30)),
                exchange(200, #"{"result":"verified","transaction_id":"77"}"#, latency: .seconds(2)),
            ]
        ])
        var retry = Configuration.RetrySettings()
        retry.initialDelay = .milliseconds(10)
        retry.maxDelay = .milliseconds(20)
        retry.jitter = .none
        let settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false), maxInFlight: 4, maxRate: nil, burst: 10,
            circuitThreshold: 10, circuitCooldown: .seconds(1), circuitMaxCooldown: .seconds(5), requestTimeout: .seconds(5))
        let scheduler = Scheduler(
            store: store, settings: settings,
            senders: Scheduler.Senders(verifier: MerchantVerifier(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(5)), transport: transport)),
            logger: .discarding, clock: SystemClock())
        let changes = Atomic<Int>(0)
        await scheduler.setChangeObserver { changes.add(1, ordering: .relaxed) }

        let before = await scheduler.status()
        #expect(before.requestDurations[.merchant] == LatencyHistogram())  // a configured endpoint has one from the start
        let running = Task { await scheduler.run() }
        // A bound, not a measurement: the order takes ≈2 s (the answer's scripted latency), but
        // this test has taken 27–36 s in full runs on two loaded cores, and once missed 20 s.
        let finished = await eventually(timeout: .seconds(60)) { (try? store.countsByState()[.finished]) == 1 }
        await scheduler.stop(drainTimeout: .seconds(1))
        await running.value
        #expect(finished)

        let status = await scheduler.status()
        let merchant = try #require(status.requestDurations[.merchant])
        #expect(merchant.count == 2)
        #expect(abs(merchant.sum - 2.03) < 1e-9)
        let cumulative = Dictionary(uniqueKeysWithValues: merchant.cumulativeCounts.map { ($0.upperBound, $0.count) })
        #expect(cumulative[0.025] == 0)
        #expect(cumulative[0.05] == 1)
        #expect(cumulative[1] == 1)
        #expect(cumulative[2.5] == 2)
        #expect(status.counters.requestsSent == 2)
        #expect(status.counters.outcomes == ["transient": 1, "verified": 1])
        #expect(status.counters.outcomes.keys.allSatisfy(MetricsSnapshot.outcomeClasses.contains))
        #expect(status.counters.finished == 1 && status.counters.retried == 1)
        #expect(status.endpoints.map(\.endpoint) == [.merchant])
        #expect(changes.load(ordering: .relaxed) >= 2)  // the claim and the outcomes moved orders
        store.close()
    }
}
