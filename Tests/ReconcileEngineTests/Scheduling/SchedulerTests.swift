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
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false), maxInFlight: 4, maxRate: maxRate,
            burst: burst, circuitThreshold: threshold, circuitCooldown: cooldown, circuitMaxCooldown: .seconds(5), requestTimeout: .seconds(5))
    }

    func senders(_ transport: any HTTPTransport) -> Scheduler.Senders {
        Scheduler.Senders(verifier: MerchantVerifier(endpoint: EndpointSettings(url: Self.url, timeout: .seconds(5)), transport: transport))
    }

    func circuit(_ scheduler: Scheduler, _ endpoint: VerificationEndpoint) async -> String? {
        await scheduler.status().endpoints.first { $0.endpoint == endpoint }?.circuit
    }

    @Test("a probe through the gate waits for a token, and only then counts as sent: the circuit never wedges half-open")
    func probeTakesToken() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        defer { store.close() }
        // One token every 500 ms, at most one at a time; one failure opens the circuit for 100 ms.
        let clock = ManualClock()
        let scheduler = Scheduler(
            store: store, settings: settings(ScriptedTransport([:]), maxRate: 2, burst: 1, threshold: 1, cooldown: .milliseconds(100)), senders: senders(ScriptedTransport([:])),
            logger: .discarding, clock: clock)
        let first = clock.instant()
        #expect(await scheduler.acquire(.sandbox))
        await scheduler.report(.sandbox, .failure(reason: Reason(.http(503))), retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .sandbox) == "open")
        clock.advance(by: .milliseconds(150))  // the cool-down is over; the next token is not there yet

        // The probe: sent with the next token, not before and not never.
        let probe = Task { await scheduler.acquire(.sandbox) }
        await clock.waitForTimers()
        #expect(clock.pendingDeadlines == [first + .milliseconds(500)], "the probe does not wait for the next token")
        clock.advance(by: .milliseconds(350))
        #expect(await probe.value, "the probe was refused")
        #expect(await circuit(scheduler, .sandbox) == "half-open")
        await scheduler.report(.sandbox, .healthy, retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .sandbox) == "closed")
        // Closed: the next request waits for its token like any other.
        let next = Task { await scheduler.acquire(.sandbox) }
        await clock.waitForTimers()
        #expect(clock.pendingDeadlines == [first + .seconds(1)])
        clock.advance(by: .milliseconds(500))
        #expect(await next.value)
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
            store: store, settings: settings(transport, maxRate: 1, burst: 1, threshold: 1, cooldown: .milliseconds(20)), senders: senders(transport),
            logger: .discarding, clock: SystemClock())
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

    @Test("turns are spaced: attempts that end at once are committed a spacing's worth at a time, not a turn each")
    func turnsAreSpaced() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        defer { store.close() }
        let count = 60
        let candidates = try (0..<count).map { index in
            let text = OrderFixtures.orderJSON("S\(index)")
            return IngestCandidate(submission: try OrderFileParser().parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: "S\(index)", fileName: "S\(index).json")
        }
        _ = try store.ingest(candidates, verifierKind: .http, now: Date())
        // Answers at once; the duplicates of transaction 1 escalate, which ends them just as well.
        let transport = ScriptedTransport([Self.url: [answer(#"{"result":"verified","transaction_id":"1"}"#)]])
        var settings = settings(transport)
        settings.turnSpacing = .milliseconds(25)
        let scheduler = Scheduler(store: store, settings: settings, senders: senders(transport), logger: .discarding, clock: SystemClock())
        let commits = Mutex(0)
        await scheduler.setChangeObserver { commits.withLock { $0 += 1 } }
        let started = ContinuousClock.now
        let running = Task { await scheduler.run() }
        let ended = await eventually(timeout: .seconds(60)) {
            let counters = await scheduler.counters
            return counters.finished + counters.escalated == count
        }
        let elapsed = ContinuousClock.now - started
        await scheduler.stop(drainTimeout: .seconds(1))
        await running.value
        #expect(ended)
        // Four in flight and one leased ahead: without spacing, a turn every few attempts. With
        // it, no more turns than spacings passed (a slow machine only makes the bound looser).
        let turns = commits.withLock { $0 }
        #expect(turns <= Int(elapsed / .milliseconds(25)) + 2, "\(turns) turns in \(elapsed)")
        #expect(turns >= count / 5, "every turn leases at most five: \(turns)")
    }

    @Test("a failure on its way to a busy scheduler makes the answers after it go there too, in order: none is dropped as a no-op")
    func failureQueuedBeforeTheScheduler() {
        let quiet = QuietEndpoints()
        quiet.update(.merchant, quiet: true)
        #expect(quiet.skipsHealthy(.merchant))
        // The failure waits for the scheduler (in a turn's commit); a healthy answer comes next.
        quiet.failureQueued(.merchant)
        #expect(!quiet.skipsHealthy(.merchant), "a healthy answer after a queued failure was dropped")
        quiet.failureQueued(.merchant)
        quiet.failureArrived(.merchant)
        quiet.update(.merchant, quiet: false)
        #expect(!quiet.skipsHealthy(.merchant))
        // The scheduler took the second failure too, then a healthy answer closed the run.
        quiet.failureArrived(.merchant)
        quiet.update(.merchant, quiet: true)
        #expect(quiet.skipsHealthy(.merchant))
        #expect(!quiet.skipsHealthy(.production), "an endpoint never observed is not quiet")
    }

    @Test("a healthy answer goes past the scheduler only while it would change nothing: after a failure it resets the count")
    func healthyAnswersAfterAFailureCount() async throws {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        defer { store.close() }
        let scheduler = Scheduler(store: store, settings: settings(ScriptedTransport([:]), threshold: 2), senders: senders(ScriptedTransport([:])), logger: .discarding, clock: ManualClock())
        #expect(!scheduler.quietEndpoints.skipsHealthy(.merchant), "quiet before anything was seen")
        await scheduler.report(.merchant, .healthy, retryAfter: nil, rateLimited: false)
        #expect(scheduler.quietEndpoints.skipsHealthy(.merchant))
        await scheduler.report(.merchant, .failure(reason: Reason(.http(503))), retryAfter: nil, rateLimited: false)
        #expect(!scheduler.quietEndpoints.skipsHealthy(.merchant), "still quiet after a failure")
        // This one must reach the circuit: it ends the run of failures.
        await scheduler.report(.merchant, .healthy, retryAfter: nil, rateLimited: false)
        await scheduler.report(.merchant, .failure(reason: Reason(.http(503))), retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .merchant) == "closed", "two failures apart counted as two in a row")
        await scheduler.report(.merchant, .failure(reason: Reason(.http(503))), retryAfter: nil, rateLimited: false)
        #expect(await circuit(scheduler, .merchant) == "open")
    }
}
